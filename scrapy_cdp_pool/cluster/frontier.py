"""Frontier: one worker's calls to the cluster's Redis, one round trip each
at most (a push of a fingerprint known to be stored makes none).

A thin layer over the Lua scripts of :mod:`scrapy_cdp_pool.cluster.scripts`
with redis-py's blocking client: Scrapy's scheduler interface
(``enqueue_request``, ``next_request``) is synchronous, and a request must be
taken in the call that hands it out (taking ahead, asynchronously, would hold
profile locks and host slots for requests not started). A round trip on the
same machine is ~0.1 ms (``benchmarks/cluster.py`` measures it). Errors that
mean Redis cannot serve now (:func:`redis_outage`: unreachable, timed out, out
of memory, read-only, loading...) are the caller's to handle.
"""

from __future__ import annotations

import math
import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis
from redis.exceptions import (
    AskError,
    BusyLoadingError,
    ClusterDownError,
    ClusterError,
    MasterDownError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from scrapy_cdp_pool.cluster import scripts
from scrapy_cdp_pool.cluster.bloom import BLOOM_COUNT, Bloom
from scrapy_cdp_pool.cluster.keys import key_prefix, profile_lock_key
from scrapy_cdp_pool.cluster.redis_client import CALL_TIMEOUT_S, route_key

if TYPE_CHECKING:
    from collections.abc import Iterable

REDIS_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)
"""Redis could not be reached, or did not answer in time (a subset of what
:func:`redis_outage` calls an outage)."""
_OUTAGE_CODES = {
    "OOM": "out of memory (maxmemory reached, maxmemory-policy noeviction): writes refused",
    "READONLY": "read-only (a replica, or a primary demoted by a failover): writes refused",
    "LOADING": "loading its data set (just restarted)",
    "MASTERDOWN": "a replica whose primary is down",
    "MISCONF": "refusing writes: it cannot persist (MISCONF, e.g. a full disk)",
    "NOREPLICAS": "refusing writes: not enough replicas (min-replicas-to-write)",
    "BUSY": "busy running a script",
    "TRYAGAIN": "a Redis Cluster slot being migrated (TRYAGAIN)",
    "CLUSTERDOWN": "a Redis Cluster that is down (CLUSTERDOWN)",
    "MOVED": "a Redis Cluster slot moved or being migrated (MOVED/ASK)",
    "ASK": "a Redis Cluster slot moved or being migrated (MOVED/ASK)",
}
#: what redis-py's cluster client raises itself, no error code on the wire
_CLIENT_CAUSES = {
    "TTL": (
        "a Redis Cluster redirecting past the client's retries (TTL exhausted: a storm of "
        "MOVED/ASK/TRYAGAIN, or a failover under way)"
    ),
    "UNCOVERED": "a Redis Cluster slot served by no node (a failover under way)",
}
_OUTAGE_CLASSES: tuple[tuple[type[BaseException], str], ...] = (
    (BusyLoadingError, "LOADING"),  # a ConnectionError: before it
    (OutOfMemoryError, "OOM"),
    (ReadOnlyError, "READONLY"),
    (TryAgainError, "TRYAGAIN"),
    (MasterDownError, "MASTERDOWN"),  # a ClusterDownError: before it
    (ClusterDownError, "CLUSTERDOWN"),
    (AskError, "MOVED"),  # MovedError too
    # redis-py's cluster client gave up following redirects ("TTL exhausted.")
    (ClusterError, "TTL"),  # after ClusterDownError, one of its kind
    (SlotNotCoveredError, "UNCOVERED"),  # not a RedisError: RedisClusterException
)


def redis_outage(error: BaseException) -> str | None:
    """What ``error`` (raised by a redis-py call) says about Redis when it
    means "Redis cannot serve now, try again later", as a phrase for the
    log; ``None`` for any other error (a bug: a script error, a wrong type).

    The one place that tells an outage from a fault of the caller: every
    cluster caller retries an outage with backoff and keeps what it could not
    send (:class:`~scrapy_cdp_pool.cluster.link.ClusterLink`)."""
    for cls, code in _OUTAGE_CLASSES:
        if isinstance(error, cls):
            return _OUTAGE_CODES.get(code) or _CLIENT_CAUSES[code]
    if isinstance(error, (RedisTimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(error, (RedisConnectionError, OSError)):
        return "unreachable"
    if isinstance(error, ResponseError):
        # codes redis-py has no class for, also when a Lua script passes them
        # on ("MISCONF ...", "... script: ..., -OOM command not allowed ...")
        text = str(error)
        for code, cause in _OUTAGE_CODES.items():
            if text.startswith(code + " ") or f"-{code} " in text:
                return cause
    return None


CRAWL_KEY_TYPES = {
    "seq": "string", "queued": "string", "fence": "string", "epoch": "string",
    "req": "hash", "expired": "hash", "stats": "hash", "unloadable": "hash",
    "ready": "zset", "timed": "zset", "leases": "zset", "workers": "zset",
    "seen": "set", "start_seen": "set", "wake": "list", "feed": "list",
}  # fmt: skip
"""The Redis type of each of a crawl's keys with a fixed name (after its
prefix): a key found of another type is named when a call fails with
``WRONGTYPE`` (:meth:`Frontier.wrong_types`)."""


STALE_TAKE_SLACK_MS = 250
"""Taken off a take's deadline (:meth:`Frontier.take`): a take Redis runs in
the last 250 ms before its sender would give up leases nothing (its answer
could come too late: a lease nobody knows of), and the worker takes again.
(Until 2026-12-08 it was added: a take run within 250 ms after the give-up
leased, found when takes began to carry the pushes and the short-outage test
saw the late take's lease run out.) The clock offset's own error (one round
trip at most) moves the deadline earlier, not later."""
PRIORITY_LIMIT = 2**19
"""Priorities must lie in ``(-PRIORITY_LIMIT, PRIORITY_LIMIT)``: a request's
score is ``-priority * 2**33 + id``, exact in Redis's doubles (< 2**53) for
2**33 requests per crawl."""
_SCORE_STEP = 2**33
SCAN_GATES = 1000
"""Most gates one take looks at (each one parked when closed), so one script
call never runs long; when reached, the take returns nothing and is asked again."""
KNOWN_FINGERPRINTS = 100_000
"""Most fingerprints a worker remembers as stored in a ``seen`` set (by its
own pushes, or Redis's answer that they were there): a push of one of them is
refused without a round trip. Past this many the memory is cleared (about
100 bytes each) and filled again."""
SEEN = "seen"
START_SEEN = "start_seen"


def _count(raw: bytes | None) -> int:
    """A Redis hash field holding a count: 0 when absent."""
    return int(raw) if raw else 0


def worker_id() -> str:
    """``<host name>:<pid>:<random>``: unique across machines and restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def score_base(priority: int) -> int:
    """:raises ValueError: ``priority`` is outside what the frontier orders."""
    if not -PRIORITY_LIMIT < priority < PRIORITY_LIMIT:
        raise ValueError(
            f"priority {priority} is outside what the cluster frontier orders "
            f"(-{PRIORITY_LIMIT}, {PRIORITY_LIMIT})"
        )
    return -priority * _SCORE_STEP


@dataclass(frozen=True)
class Taken:
    """What :meth:`Frontier.take` returned. ``lease`` is ``None`` when no
    request may start; ``wait_s`` is when a parked gate is due (``None``: none)."""

    lease: str | None
    data: bytes
    token: int | None
    requeued: int
    settled: int
    queued: int
    leased: int
    wait_s: float | None
    feed_type: str = ""
    """The feed key's type when the take could not read it (not a list, set or
    sorted set); empty otherwise."""
    poisoned: int = 0
    """How many leases of the request taken ran out, when that reached
    ``max_deliveries`` (it fails as poisoned); 0 otherwise."""
    ready_left: bool = True
    """A gate was still open after this take (looked at past the request
    taken, up to ``spare`` + 1 of them): another take may start one."""
    profile: tuple[bytes | None, bytes | None, bytes | None] | None = None
    """The taken request's profile as stored, read in the take (``state``,
    ``identity``, health's ``retired``), when asked for; ``None`` otherwise."""
    profile_failures: int | None = None
    """With :attr:`profile`: the fleet's ``consecutive_failures`` of that
    profile as the take read it (0 when absent); ``None`` otherwise."""


class Frontier:
    def __init__(
        self,
        client: redis.Redis,
        name: str,
        worker: str,
        *,
        lease_s: float,
        host_concurrency: int | None = None,
        host_rate: float | None = None,
        max_deliveries: int = 3,
        call_timeout_s: float | None = CALL_TIMEOUT_S,
        bloom: Bloom | None = None,
        prefix: str | None = None,
    ) -> None:
        """``prefix``: the keys' prefix (default: the crawl's,
        :func:`~scrapy_cdp_pool.cluster.keys.key_prefix`; another bucket's:
        :mod:`~scrapy_cdp_pool.cluster.shards`)."""
        self.client = client
        #: the crawl's fingerprints in a Bloom filter instead of the set
        #: :data:`SEEN` (``CDP_POOL_CLUSTER_DUPEFILTER = "bloom"``)
        self.bloom = bloom
        #: the client's timeout: a take Redis runs later than this after it
        #: was sent (by Redis's clock, :attr:`_clock_offset_ms`) leases
        #: nothing (its sender gave up on its answer)
        self.call_timeout_s = call_timeout_s
        #: Redis's clock (ms) minus this process's monotonic clock (ms), as
        #: of the last take's answer (``None`` before one)
        self._clock_offset_ms: float | None = None
        self.prefix = prefix or key_prefix(name)
        #: declared first by every script: a Redis Cluster runs it on the
        #: crawl's shard (see redis_client)
        self.route_key = route_key(self.prefix)
        self.worker = worker
        self.lease_ms = max(1, round(lease_s * 1000))
        self.host_concurrency = host_concurrency or 0
        self.host_interval_ms = round(1000 / host_rate) if host_rate else 0
        #: leases of one request that may run out before it is poisoned
        self.max_deliveries = max_deliveries
        #: round trips made (each call below is one)
        self.calls = 0
        #: (seen set, fingerprint) known to be in Redis: the sets only grow
        #: while the crawl lives (a lost crawl closes the spider)
        self._known: set[tuple[str, bytes]] = set()
        #: the last :meth:`push` stored its request in a gate that became
        #: ready with it (a take may start it; a wake token was pushed)
        self.readied = False
        #: the answers of the pushes the last :meth:`take` carried
        self.pushed: list[int | Exception] | None = None
        #: the type of a feed key moved from another slot (move_feed), as last seen
        self._feed_types: dict[str, str] = {}
        self._push = client.register_script(scripts.PUSH)
        self._take = client.register_script(scripts.TAKE)
        self._settle = client.register_script(scripts.SETTLE)
        self._renew = client.register_script(scripts.RENEW)
        self._lock = client.register_script(scripts.LOCK_PROFILE)
        self._unlock = client.register_script(scripts.UNLOCK_PROFILE)
        self._pause = client.register_script(scripts.PAUSE_HOST)
        self._holds = client.register_script(scripts.HOLDS)

    def allow_oom(self) -> None:
        """Redis is 7 or later: renewals and settlements run when it is out
        of memory too (:data:`~scrapy_cdp_pool.cluster.scripts.ALLOW_OOM`)."""
        self._settle = self.client.register_script(scripts.ALLOW_OOM + scripts.SETTLE)
        self._renew = self.client.register_script(scripts.ALLOW_OOM + scripts.RENEW)

    def _run(self, script: Any, *args: object) -> Any:
        self.calls += 1
        return script(keys=[self.route_key], args=[self.prefix, *args])

    def run_keyed(self, script: Any, keys: list[str], *args: object) -> Any:
        """Run a script that declares every key it touches (``keys``), with
        the prefix as ``ARGV[1]`` and ``args`` after it: one round trip."""
        self.calls += 1
        return script(keys=keys, args=[self.prefix, *args])

    def push(self, data: bytes, gate: str, priority: int, seen: str = "", fp: bytes = b"") -> bool:
        """Store a request under ``gate``; ``False`` when ``fp`` was in the set
        ``seen`` already (nothing stored; :data:`SEEN` with :attr:`bloom`
        set: in the Bloom filter). A fingerprint this worker already
        knows to be there (:data:`KNOWN_FINGERPRINTS`) is refused without a
        round trip. :attr:`readied` says whether the gate became ready with
        it. :raises ValueError: see :func:`score_base`."""
        self.readied = False
        if seen and (seen, fp) in self._known:
            return False
        keys, args = self.push_call(data, gate, priority, seen, fp)
        answer = int(self.run_keyed(self._push, keys, *args))
        self.readied = answer > 0
        stored = answer != 0
        if seen:
            self._remember(seen, fp)
        return stored

    def prepare_push(
        self, data: bytes, gate: str, priority: int, seen: str = "", fp: bytes = b""
    ) -> tuple[list[str], list[object]] | None:
        """:meth:`push`'s keys and arguments for :meth:`push_many`; ``None``
        when ``fp`` is known to be in ``seen`` (a duplicate, no round trip).
        The fingerprint counts as known from here: the caller keeps the
        request until it is stored. :raises ValueError: see :func:`score_base`."""
        if seen and (seen, fp) in self._known:
            return None
        call = self.push_call(data, gate, priority, seen, fp)
        if seen:
            self._remember(seen, fp)
        return call

    def push_many(self, calls: list[tuple[list[str], list[object]]]) -> list[int | Exception]:
        """Run :meth:`push`'s script for each of ``calls`` (from
        :meth:`prepare_push`), in order, in one round trip (pipelined
        ``EVALSHA``; one whose script Redis does not have, after a restart,
        is run again on its own, loading it). Each answer: > 0 stored and its
        gate became ready, < 0 stored, 0 a duplicate, or the error Redis
        answered for it. :raises Exception: the connection's errors."""
        self.calls += 1
        return self._pipelined(calls)[0]

    def _pipelined(
        self,
        calls: list[tuple[list[str], list[object]]],
        last: tuple[Any, list[str], list[object]] | None = None,
    ) -> tuple[list[int | Exception], Any]:
        """``calls`` of the push script, then ``last`` (a script, its keys and
        its arguments, the prefix first), in one pipelined round trip: the
        pushes' answers (see :meth:`push_many`) and ``last``'s (an exception
        when Redis answered one). A script Redis does not have (after a
        restart) is run again on its own, loading it, in its turn."""
        sha = self._push.sha
        with self.client.pipeline(transaction=False) as pipe:
            for keys, args in calls:
                pipe.evalsha(sha, len(keys), *keys, self.prefix, *args)  # type: ignore[arg-type]
            if last is not None:
                script, keys, args = last
                pipe.evalsha(script.sha, len(keys), *keys, *args)  # type: ignore[arg-type]
            answers = pipe.execute(raise_on_error=False)
        out: list[int | Exception] = []
        for (keys, args), answer in zip(calls, answers, strict=False):
            if isinstance(answer, NoScriptError):
                answer = self.run_keyed(self._push, keys, *args)
            out.append(answer if isinstance(answer, Exception) else int(answer))
        if last is None:
            return out, None
        answer = answers[-1]
        if isinstance(answer, NoScriptError):
            script, keys, args = last
            answer = script(keys=keys, args=args)
        return out, answer

    def _remember(self, seen: str, fp: bytes) -> None:
        if len(self._known) >= KNOWN_FINGERPRINTS:
            self._known.clear()
        self._known.add((seen, fp))

    def push_call(
        self, data: bytes, gate: str, priority: int, seen: str = "", fp: bytes = b""
    ) -> tuple[list[str], list[object]]:
        """The keys and arguments (after the prefix) of :meth:`push`'s script
        (pipelined by benchmarks and tests). :raises ValueError: see :func:`score_base`."""
        base = score_base(priority)
        if seen == SEEN and self.bloom is not None:
            key, offsets = self.bloom.place(self.prefix, fp)
            keys = scripts.push_keys(self.prefix, seen, gate, (key, self.prefix + BLOOM_COUNT))
            return keys, ["b", fp, gate, base, data, *offsets]
        return scripts.push_keys(self.prefix, seen, gate), [seen, fp, gate, base, data]

    def take(
        self,
        acks: Iterable[str] = (),
        feed_key: str = "",
        releases: Iterable[str] = (),
        *,
        profile_copy: bool = False,
        spare: int = 0,
        pushes: list[tuple[list[str], list[object]]] | None = None,
    ) -> Taken:
        """Settle ``releases`` (``r:<id>`` ops, see :meth:`settle`), acknowledge
        ``acks`` (lease ids), move items from the feed ``feed_key`` (if any: a
        list, set or sorted set) into the frontier when it runs low, then take
        a request, all in one round trip. ``Taken.settled`` counts the acks. A
        feed entry's ``data`` starts with
        :data:`~scrapy_cdp_pool.cluster.scripts.FEED_MARK`. ``profile_copy``:
        read the stored copy of the taken request's profile too
        (``Taken.profile``). ``spare``: how many more requests this worker
        takes right after this one (its free download slots): the take looks
        past the request it takes for gates still open, and wakes another
        worker (a token on the wake list) only for those beyond ``spare``;
        ``Taken.ready_left`` says whether it found one. Run by Redis later
        than :attr:`call_timeout_s` (less :data:`STALE_TAKE_SLACK_MS`) after
        it was sent, by Redis's clock, it settles and puts expired leases back
        but leases nothing: its sender gave up on the answer, and a lease
        nobody knows of would run out and count as a delivery. ``pushes``
        (from :meth:`prepare_push`) run first, pipelined in the same round
        trip; their answers are in :attr:`pushed` (as :meth:`push_many`
        gives them; ``None`` when the round trip failed), even when the
        take's own answer is an error (raised)."""
        ops = [*releases, *(f"a:{lease}" for lease in acks)]
        self.calls += 1
        self.pushed = None
        sent_ms = time.monotonic() * 1000
        deadline = 0
        if self.call_timeout_s is not None and self._clock_offset_ms is not None:
            deadline = math.ceil(
                sent_ms + self._clock_offset_ms + self.call_timeout_s * 1000 - STALE_TAKE_SLACK_MS
            )
        keys = [self.route_key, feed_key] if feed_key else [self.route_key]
        args: list[object] = [
            self.prefix,
            self.worker,
            self.lease_ms,
            self.host_concurrency,
            self.host_interval_ms,
            SCAN_GATES,
            self.max_deliveries,
            "1" if profile_copy else "0",
            deadline,
            max(0, spare),
            *ops,
        ]
        if pushes:
            self.pushed, raw = self._pipelined(pushes, (self._take, keys, args))
            if isinstance(raw, Exception):
                raise raw
        else:
            raw = self._take(keys=keys, args=args)  # type: ignore[arg-type]
        self._clock_offset_ms = int(raw[11]) - time.monotonic() * 1000
        lease = raw[0].decode() if raw[0] else None
        wait_ms = int(raw[7])
        return Taken(
            lease=lease,
            data=raw[1] or b"",
            token=int(raw[2]) if raw[2] else None,
            requeued=int(raw[3]),
            settled=int(raw[4]),
            queued=int(raw[5]),
            leased=int(raw[6]),
            wait_s=wait_ms / 1000 if wait_ms >= 0 else None,
            feed_type=raw[8].decode() if raw[8] else "",
            poisoned=int(raw[9]),
            ready_left=bool(int(raw[10])),
            profile=(raw[12], raw[13], raw[14]) if len(raw) >= 15 else None,
            profile_failures=_count(raw[15]) if len(raw) >= 16 else None,
        )

    def settle(self, ops: Iterable[str]) -> int:
        """``r:<id>`` (release the profile and host slot), ``a:<id>``
        (acknowledge), ``g:<id>`` (give back to the queue)."""
        ops = list(ops)
        return int(self._run(self._settle, self.worker, *ops)) if ops else 0

    def leave(self) -> None:
        """This worker stopped cleanly: it no longer counts as live (a killed
        one does until its heartbeat is older than a lease)."""
        self.client.zrem(f"{self.prefix}workers", self.worker)

    def renew(self, leases: Iterable[str], locks: Iterable[tuple[str, int]] = ()) -> list[str]:
        """Extend leases (and direct profile locks ``(profile, token)``);
        those no longer held."""
        args = [*leases, *(f"i:{token}:{profile}" for profile, token in locks)]
        lost = self._run(self._renew, self.worker, self.lease_ms, *args)
        return [item.decode() for item in lost]

    def holds(self, lease: str) -> bool:
        """Whether this worker still holds ``lease`` (not run out) and its
        profile lock (the fencing token it was taken with)."""
        return bool(self._run(self._holds, self.worker, lease))

    def lock_profile(self, profile: str) -> int | None:
        """Lock ``identity`` outside the queue; its fencing token, ``None`` if busy."""
        lock_keys = [profile_lock_key(self.prefix, profile), f"{self.prefix}fence"]
        token = int(self.run_keyed(self._lock, lock_keys, self.worker, self.lease_ms))
        return token or None

    def unlock_profile(self, profile: str, token: int) -> bool:
        return bool(self._run(self._unlock, profile, token))

    def pause_host(self, host: str, seconds: float, channel: str | None = None) -> float:
        """Pause ``host`` fleet-wide; the seconds its pause has left.
        ``channel``: the prefix of the channel the pause is published on
        (default: this frontier's; a crawl's other buckets publish on bucket
        0's, :mod:`~scrapy_cdp_pool.cluster.shards`)."""
        keys = [scripts.host_keys(self.prefix, host)[0], f"{self.prefix}pauses"]
        self.calls += 1
        left_ms = int(
            self._pause(
                keys=keys,
                args=[channel or self.prefix, max(1, round(seconds * 1000)), host],
            )
        )
        return max(0, left_ms) / 1000

    def pause_left(self, host: str) -> float:
        """Seconds until ``host``'s fleet-wide pause ends; 0.0 when not paused."""
        self.calls += 1
        left_ms = int(self.client.pttl(f"{self.prefix}pause:{host}"))
        return max(0, left_ms) / 1000

    def pending(self) -> tuple[int, int]:
        """``(queued, leased)`` requests, fleet-wide."""
        self.calls += 1
        with self.client.pipeline(transaction=False) as pipe:
            pipe.get(f"{self.prefix}queued")
            pipe.zcard(f"{self.prefix}leases")
            queued, leased = pipe.execute()
        return int(queued or 0), int(leased)

    @property
    def feed_staging_key(self) -> str:
        """The list, in the crawl's slot, that a feed key in another slot of a
        Redis Cluster is moved to (:meth:`move_feed`); the take reads it."""
        return f"{self.prefix}feed"

    def move_feed(self, feed_key: str, batch: int, kept: list[bytes]) -> tuple[int, str]:
        """Move up to ``batch`` items of ``feed_key`` (a list, read from the
        left; a set; a sorted set, highest score first: as the take reads
        them), a key in another hash slot of a Redis Cluster, to
        :attr:`feed_staging_key`: popped there, then pushed here, two round
        trips (three while the key's type is not known). ``kept``: items
        popped that Redis did not take yet (an outage between the two calls:
        pushed first at the next call; lost if the worker dies meanwhile, so
        an item is fed at most once). Returns ``(items moved, the key's
        type when it cannot be read, else '')``.

        :raises Exception: as the calls raise (an outage leaves what was
            popped in ``kept``)."""
        if not kept:
            kind = self._feed_types.get(feed_key) or self._type_of(feed_key)
            if kind not in ("list", "set", "zset"):
                self._feed_types.pop(feed_key, None)
                return 0, "" if kind == "none" else kind
            self._feed_types[feed_key] = kind
            self.calls += 1
            items: list[bytes]
            try:
                if kind == "list":
                    items = list(self.client.lpop(feed_key, batch) or [])  # type: ignore[arg-type]
                elif kind == "set":
                    items = list(self.client.spop(feed_key, batch) or [])  # type: ignore[arg-type]
                else:
                    items = [item for item, _ in self.client.zpopmax(feed_key, batch)]  # type: ignore[str-unpack, misc]
            except ResponseError as e:
                if "WRONGTYPE" not in str(e):
                    raise
                self._feed_types.pop(feed_key, None)  # its type changed: asked again
                return 0, ""
            if not items:
                self._feed_types.pop(feed_key, None)  # empty keys vanish: asked again
                return 0, ""
            kept.extend(items)
        self.calls += 1
        self.client.rpush(self.feed_staging_key, *kept)
        moved = len(kept)
        kept.clear()
        return moved, ""

    def wrong_types(self) -> list[str]:
        """The crawl's keys with a fixed name (:data:`CRAWL_KEY_TYPES`) that
        exist with another type, as ``'<key> is a <type>, not a <type>'``
        (one round trip, pipelined ``TYPE`` calls; to name the key after a
        ``WRONGTYPE``, which does not)."""
        self.calls += 1
        names = list(CRAWL_KEY_TYPES)
        with self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.type(f"{self.prefix}{name}")
            kinds = pipe.execute()
        found = []
        for name, kind in zip(names, kinds, strict=True):
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            if kind not in ("none", CRAWL_KEY_TYPES[name]):
                found.append(f"{self.prefix}{name} is a {kind}, not a {CRAWL_KEY_TYPES[name]}")
        return found

    def _type_of(self, key: str) -> str:
        self.calls += 1
        kind = self.client.type(key)
        return kind.decode() if isinstance(kind, bytes) else str(kind)

    def park_unloadable(self, lease: str, data: bytes) -> None:
        """Keep a request this worker cannot rebuild in ``unloadable`` and
        acknowledge it (it would fail the same way on every worker)."""
        self.calls += 1
        self.client.hset(f"{self.prefix}unloadable", lease, data)
        self.settle([f"a:{lease}"])
