"""``scrapy-cdp-pool cluster status|leases|pause|resume|purge|export``: look at
and steer a cluster crawl from any machine that reaches its Redis.

The Redis URL comes from ``--redis``, else the environment's or the Scrapy
project's ``CDP_POOL_CLUSTER_REDIS_URL`` (keep a password out of command
lines: use the environment); the crawl's name from ``--name``, else the
project's ``CDP_POOL_CLUSTER_NAME``.

- ``status``: one JSON object on stdout: requests queued per priority, leases
  (owner, seconds left, profile, host), busy profiles (owner, fencing token,
  seconds left), paused hosts (seconds left), workers by last heartbeat (live:
  within ``--lease`` seconds), requests not done whose lease ran out at least
  once (``expired``: poisoned at ``CDP_POOL_CLUSTER_MAX_DELIVERIES``), requests
  done and poisoned (apart), pages/s
  over ``--interval`` seconds. It reads
  every queued request's score: O(queued) in Redis, for an operator, not a loop.
  ``leased`` and ``leases`` (the first 100) are read in one transaction; the
  other figures each at their own moment within the interval.
- ``leases``: each leased request, oldest first: its URL (read from the
  stored request without importing anything it names), the worker holding
  it, its age (seconds since it was taken), seconds until its lease runs out.
- ``poisoned``: the requests poisoned (their lease ran out
  ``CDP_POOL_CLUSTER_MAX_DELIVERIES`` times): id, URL, why, when. They are
  kept, not counted as ``done`` in ``status`` (``poisoned`` there);
  ``--requeue`` queues them again (all, or those named by id, URL or
  Scrapy's default fingerprint), their count of leases run out from 0;
  ``--drop`` deletes them. One a worker is failing now is left (exit 1).
- ``pause``: workers stop taking requests (those held are finished);
  ``resume``: they take again. A crawl may be paused before it starts.
- ``purge``: delete every key of the crawl (frontier, fingerprints, leases,
  profiles stored in Redis); refused while a worker is live, unless ``--force``.

Exit status: 0, 1 when Redis cannot be reached (a Redis Cluster node down
included), the crawl has no key in Redis (every command but ``pause``: a
misspelt ``--name``) or purge is refused (one line on stderr says why, the
URL's password masked), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

from redis.exceptions import RedisClusterException, RedisError

from scrapy_cdp_pool.cluster.frontier import REDIS_ERRORS, redis_outage
from scrapy_cdp_pool.cluster.keys import glob_escaped, key_prefix, redis_time_ms
from scrapy_cdp_pool.cluster.profile_store import SharedProfiles, export_profiles
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.cluster.shards import Buckets, stored_prefixes
from scrapy_cdp_pool.errors import ProfileFileError
from scrapy_cdp_pool.messages import redact_url, scrub_secrets
from scrapy_cdp_pool.tools.cluster_records import leases, poisoned, settle_poisoned

HELP = "look at or steer a cluster crawl on Redis: status, pause, resume, purge"
_SCORE_STEP = 2**33


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    for name, text in (
        ("status", "the crawl's state as one JSON object"),
        ("leases", "each leased request: its URL, the worker holding it, its age"),
        ("poisoned", "list poisoned requests; --requeue or --drop them"),
        ("pause", "workers stop taking requests"),
        ("resume", "workers take requests again"),
        ("purge", "delete every Redis key of the crawl"),
        ("export", "write the crawl's shared profiles to files (0600)"),
    ):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument("--redis", help="Redis URL (default: CDP_POOL_CLUSTER_REDIS_URL)")
        action.add_argument("--name", help="the crawl (default: CDP_POOL_CLUSTER_NAME)")
        action.add_argument(
            "--lease", type=float, default=30.0,
            help="seconds since its last heartbeat a worker counts as live (default 30)",
        )  # fmt: skip
        if name == "status":
            action.add_argument(
                "--interval", type=float, default=1.0,
                help="seconds over which pages/s is measured (default 1; 0: not measured)",
            )  # fmt: skip
        if name in ("leases", "poisoned"):
            action.add_argument("--json", action="store_true", help="one JSON list")
        if name == "poisoned":
            what = action.add_mutually_exclusive_group()
            for flag, verb in (("--requeue", "queue again"), ("--drop", "delete")):
                what.add_argument(
                    flag, nargs="*", metavar="ID|URL|FINGERPRINT",
                    help=f"{verb} these poisoned requests (none named: all)",
                )  # fmt: skip
        if name == "purge":
            action.add_argument("--force", action="store_true", help="even with live workers")
        if name == "export":
            action.add_argument(
                "--dir",
                required=True,
                help="directory to write NAME.json and NAME.identity.json to",
            )
            action.add_argument(
                "--profile", action="append", help="only this profile (repeatable; default: all)"
            )


def _project_setting(name: str) -> str | None:
    value = os.environ.get(name)
    if value:
        return value
    try:
        from scrapy.utils.project import get_project_settings

        setting = get_project_settings().get(name)
    except Exception:  # noqa: BLE001 - no project here
        return None
    return str(setting) if setting else None


def run(args: argparse.Namespace) -> int:
    url = args.redis or _project_setting("CDP_POOL_CLUSTER_REDIS_URL")
    name = args.name or _project_setting("CDP_POOL_CLUSTER_NAME")
    if not url or not name:
        missing = "--redis (or CDP_POOL_CLUSTER_REDIS_URL)" if not url else "--name"
        print(f"scrapy-cdp-pool cluster: {missing} is needed", file=sys.stderr)
        return 1
    try:
        client = connect(url, 10.0)
    except ValueError as e:  # redis-py's parse of the URL
        print(
            f"scrapy-cdp-pool cluster: {redact_url(url)} is not a Redis URL: "
            f"{scrub_secrets(e, url)}",
            file=sys.stderr,
        )
        return 1
    except _UNREACHABLE as e:  # a Redis Cluster client asks a node for the layout at once
        _unreachable(url, e)
        return 1
    prefix = key_prefix(name)
    try:
        if args.cluster_command != "pause" and not crawl_exists(client, prefix):
            print(
                f"scrapy-cdp-pool cluster: no crawl named {name!r} in the Redis at "
                f"{redact_url(url)} (no key starts with {prefix!r}); check --name",
                file=sys.stderr,
            )
            return 1
        prefixes = stored_prefixes(client, name)  # the crawl's buckets (cluster/shards.py)
        if args.cluster_command == "status":
            print(json.dumps(status(client, prefixes, args.lease, args.interval), indent=1))
        elif args.cluster_command == "leases":
            _print_leases(_each_bucket(client, prefixes, leases), args.json)
        elif args.cluster_command == "poisoned":
            return _poisoned_command(client, prefixes, name, args)
        elif args.cluster_command in ("pause", "resume"):
            _pause(client, prefixes, name, args.cluster_command == "pause")
        elif args.cluster_command == "export":
            shared = SharedProfiles(
                client,
                prefix,
                owner="export",
                prefixes=prefixes,
                prefix_of=Buckets.profile_prefixes(prefixes),
            )
            written = export_profiles(shared, args.dir, args.profile)
            print(f"cluster crawl {name!r}: {len(written)} profile files written to {args.dir}")
        else:
            live = _workers(client, prefix, args.lease)["live"]
            if live and not args.force:
                print(
                    f"scrapy-cdp-pool cluster purge: {len(live)} workers of {name!r} are live "
                    f"({', '.join(live)}); stop them first, or use --force",
                    file=sys.stderr,
                )
                return 1
            deleted = sum(purge(client, bucket) for bucket in prefixes[::-1])  # bucket 0 last
            print(f"cluster crawl {name!r}: {deleted} keys deleted")
    except _UNREACHABLE as e:
        _unreachable(url, e)
        return 1
    except ProfileFileError as e:  # a stored profile not valid, a file not written
        print(f"scrapy-cdp-pool cluster export: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


_UNREACHABLE = (*REDIS_ERRORS, RedisError, RedisClusterException)
"""What a call raises when Redis cannot be reached or cannot serve: one line
on stderr, exit status 1 (a cluster node down, a refused connection, a
timeout, an error answer)."""


def _unreachable(url: str, error: BaseException) -> None:
    cause = redis_outage(error)
    text = scrub_secrets(error, url)
    detail = f"{cause} ({text})" if cause and cause not in text else text
    print(f"scrapy-cdp-pool cluster: Redis at {redact_url(url)}: {detail}", file=sys.stderr)


def crawl_exists(client: Any, prefix: str) -> bool:
    """Whether Redis holds any key of the crawl (a name with none is a typo,
    or a crawl purged or never started)."""
    keys = client.scan_iter(match=f"{glob_escaped(prefix)}*", count=1000)
    return next(iter(keys), None) is not None


def _print_leases(found: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(found, indent=1))
        return
    print(f"{len(found)} leased")
    for lease in found:
        age = "?" if lease["age_s"] is None else f"{lease['age_s']:.1f}s"
        print(
            f"{age:>9}  {lease['owner']}  id {lease['id']}  "
            f"expires in {lease['expires_in_s']:.1f}s  {lease['url']}"
        )


def _pause(client: Any, prefixes: list[str], name: str, pause: bool) -> None:
    """Pause (or resume) every bucket's takes."""
    for bucket in prefixes:
        if pause:
            client.set(f"{bucket}paused", str(time.time()))
        else:
            client.delete(f"{bucket}paused")
    print(
        f"cluster crawl {name!r} paused: workers finish what they hold"
        if pause
        else f"cluster crawl {name!r} resumed"
    )


def _each_bucket(client: Any, prefixes: list[str], read: Any) -> list[dict[str, Any]]:
    """``read(client, prefix)`` of each bucket, concatenated, each record's
    ``id`` named as the workers name it (``<bucket>/<id>`` past bucket 0)."""
    found = []
    for bucket, prefix in enumerate(prefixes):
        for record in read(client, prefix):
            found.append({**record, "id": Buckets.lease(bucket, record["id"])})
    return found


def _settle_poisoned(client: Any, prefixes: list[str], ids: list[str], action: str) -> list[str]:
    done = []
    for bucket, bucket_ids in Buckets.group_ids(ids).items():
        for item in settle_poisoned(client, prefixes[bucket], bucket_ids, action):
            done.append(Buckets.lease(bucket, item))
    return done


def _poisoned_command(client: Any, prefixes: list[str], name: str, args: argparse.Namespace) -> int:
    found = _each_bucket(client, prefixes, poisoned)
    action = "requeue" if args.requeue is not None else "drop" if args.drop is not None else ""
    wanted: list[str] = (args.requeue if action == "requeue" else args.drop) or []
    if not action:
        _print_poisoned(found, args.json)
        return 0
    chosen, unknown = _chosen(found, wanted)
    done = _settle_poisoned(client, prefixes, [record["id"] for record in chosen], action)
    verb = "requeued" if action == "requeue" else "dropped"
    print(f"cluster crawl {name!r}: {len(done)} poisoned requests {verb}")
    left = [record["id"] for record in chosen if record["id"] not in done]
    _warn_unsettled(name, verb, left, unknown)
    return 1 if left or unknown else 0


def _chosen(
    found: list[dict[str, Any]], wanted: list[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The poisoned requests ``wanted`` names by id, URL or fingerprint (all
    when it names none), and the names that match none."""
    chosen = [
        record for record in found
        if not wanted or {record["id"], record["url"], record["fingerprint"]} & set(wanted)
    ]  # fmt: skip
    matched = {
        key for record in chosen for key in (record["id"], record["url"], record["fingerprint"])
    }
    return chosen, [item for item in wanted if item not in matched]


def _print_poisoned(found: list[dict[str, Any]], as_json: bool) -> None:
    """The poisoned requests, as JSON or one line each."""
    if as_json:
        print(json.dumps(found, indent=1))
        return
    print(f"{len(found)} poisoned")
    for record in found:
        leased = " (being failed now)" if record["leased"] else ""
        print(f"{record['when']}  id {record['id']}  {record['url']}: {record['why']}{leased}")


def _warn_unsettled(name: str, verb: str, left: list[str], unknown: list[str]) -> None:
    """On stderr: the chosen requests a worker holds (``left``), the ids,
    URLs or fingerprints asked for that match none (``unknown``)."""
    if left:
        print(
            f"scrapy-cdp-pool cluster poisoned: {len(left)} leased by a worker failing them now "
            f"(ids {', '.join(left)}): not {verb}; run again",
            file=sys.stderr,
        )
    if unknown:
        print(
            f"scrapy-cdp-pool cluster poisoned: no poisoned request of {name!r} is "
            f"{', '.join(map(repr, unknown))}",
            file=sys.stderr,
        )


def _scan(client: Any, pattern: str) -> list[str]:
    return [key.decode() for key in client.scan_iter(match=pattern, count=1000)]


def _workers(client: Any, prefix: str, lease_s: float) -> dict[str, Any]:
    now_ms = redis_time_ms(client.time())
    beats = client.zrange(f"{prefix}workers", 0, -1, withscores=True)
    ages = {worker.decode(): round((now_ms - score) / 1000, 1) for worker, score in beats}
    return {
        "live": sorted(w for w, age in ages.items() if age <= lease_s),
        "last_heartbeat_s_ago": ages,
    }


def status(client: Any, prefixes: list[str], lease_s: float, interval_s: float) -> dict[str, Any]:
    """The crawl's state (see the module's docstring), summed over its
    buckets (``prefixes``, bucket 0's first: :mod:`~scrapy_cdp_pool.cluster.shards`)."""
    prefix = prefixes[0]
    acked_before = _acked(client, prefixes)
    started = time.monotonic()
    per_priority: dict[int, int] = {}
    leases: list[dict[str, Any]] = []
    leased = 0
    profiles: dict[str, Any] = {}
    paused: dict[str, float] = {}
    for bucket, bucket_prefix in enumerate(prefixes):
        _count_priorities(client, bucket_prefix, per_priority)
        count, first = _first_leases(client, bucket_prefix, bucket)
        leased += count
        leases += first
        profiles.update(_profile_locks(client, bucket_prefix))
        pause_prefix = f"{bucket_prefix}pause:"
        for key in _scan(client, f"{glob_escaped(pause_prefix)}*"):
            paused[key[len(pause_prefix) :]] = round(max(0, client.pttl(key)) / 1000, 1)
    if interval_s > 0:
        time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    acked_after = _acked(client, prefixes)
    elapsed = time.monotonic() - started
    return {
        "queued": sum(int(client.get(f"{p}queued") or 0) for p in prefixes),
        "queued_per_priority": {str(p): n for p, n in sorted(per_priority.items(), reverse=True)},
        "leased": leased,
        "leases": leases[:100],
        "busy_identities": profiles,
        "paused_hosts_s_left": paused,
        "workers": _workers(client, prefix, lease_s),
        "paused": bool(client.exists(f"{prefix}paused")),
        "done": acked_after,
        "requeued": sum(int(client.hget(f"{p}stats", "requeued") or 0) for p in prefixes),
        "expired": sum(int(client.hlen(f"{p}expired")) for p in prefixes),
        "poisoned": sum(int(client.hlen(f"{p}poisoned")) for p in prefixes),
        "buckets": len(prefixes),
        "pages_per_s": round((acked_after - acked_before) / elapsed, 2) if interval_s > 0 else None,
    }


def _acked(client: Any, prefixes: list[str]) -> int:
    return sum(int(client.hget(f"{p}stats", "acked") or 0) for p in prefixes)


def _count_priorities(client: Any, prefix: str, per_priority: dict[int, int]) -> None:
    for key in _scan(client, f"{glob_escaped(prefix)}q:*"):
        for _, score in client.zrange(key, 0, -1, withscores=True):
            priority = -math.floor(score / _SCORE_STEP)
            per_priority[priority] = per_priority.get(priority, 0) + 1


def _first_leases(client: Any, prefix: str, bucket: int) -> tuple[int, list[dict[str, Any]]]:
    """A bucket's lease count and its first 100 leases (ids as the workers name them)."""
    with client.pipeline(transaction=True) as pipe:  # the count and the list of one moment
        pipe.time()
        pipe.zcard(f"{prefix}leases")
        pipe.zrange(f"{prefix}leases", 0, 99, withscores=True)
        now, leased, first_leases = pipe.execute()
    now_ms = redis_time_ms(now)
    found = []
    for lease, expiry in first_leases:
        info = {
            k.decode(): v.decode()
            for k, v in client.hgetall(f"{prefix}lease:{lease.decode()}").items()
        }
        found.append({
            "id": Buckets.lease(bucket, lease.decode()), "owner": info.get("owner"),
            "identity": info.get("identity"), "host": info.get("host"),
            "expires_in_s": round((expiry - now_ms) / 1000, 1),
        })  # fmt: skip
    return int(leased), found


def _profile_locks(client: Any, prefix: str) -> dict[str, Any]:
    profiles = {}
    profile_prefix = f"{prefix}identity:"
    for key in _scan(client, f"{glob_escaped(profile_prefix)}*"):
        lock = {k.decode(): v.decode() for k, v in client.hgetall(key).items()}
        profiles[key[len(profile_prefix) :]] = {
            "owner": lock.get("owner"), "token": int(lock.get("token", 0) or 0),
            "expires_in_s": round(max(0, client.pttl(key)) / 1000, 1),
        }  # fmt: skip
    return profiles


def purge(client: Any, prefix: str) -> int:
    """Delete every key of the crawl; how many."""
    deleted = 0
    batch: list[str] = []
    for key in _scan(client, f"{glob_escaped(prefix)}*"):
        batch.append(key)
        if len(batch) >= 1000:
            deleted += int(client.delete(*batch))
            batch.clear()
    if batch:
        deleted += int(client.delete(*batch))
    return deleted
