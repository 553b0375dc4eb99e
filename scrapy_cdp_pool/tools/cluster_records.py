"""What a cluster crawl's keys hold, read for an operator
(``scrapy-cdp-pool cluster leases`` and ``poisoned``,
:mod:`~scrapy_cdp_pool.tools.cluster_cli`): each lease with the URL of the
request it holds, the poisoned requests, and their requeue or drop. A stored
request is read without importing or running anything its pickle names.
"""

from __future__ import annotations

import io
import json
import pickle
import time
from typing import Any

from scrapy_cdp_pool.cluster.keys import redis_time_ms
from scrapy_cdp_pool.cluster.redis_client import route_key
from scrapy_cdp_pool.cluster.scripts import FEED_MARK
from scrapy_cdp_pool.cluster.scripts import POISONED as POISONED_SCRIPT


class _Opaque:
    """Stands for every class or function a stored request's pickle names:
    nothing is imported or run when it is read for its URL."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __setstate__(self, state: object) -> None:
        pass

    def __setitem__(self, key: object, value: object) -> None:
        pass

    def append(self, item: object) -> None:
        pass

    def extend(self, items: object) -> None:
        pass


class _NoImportUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return _Opaque


def request_url(data: bytes | None) -> str | None:
    """The URL of a request as the cluster stores it (``P req``: a pickled
    ``Request.to_dict()``), read without importing or running anything the
    pickle names; a feed item as ``feed item <its text>``; ``None`` when
    there is none or it cannot be read."""
    if not data:
        return None
    if data.startswith(FEED_MARK):
        item = data[len(FEED_MARK) :][:200].decode("utf-8", "replace")
        return f"feed item {item}"
    try:
        fields = _NoImportUnpickler(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - not a stored request: no URL to show
        return None
    url = fields.get("url") if isinstance(fields, dict) else None
    return url if isinstance(url, str) else None


def leases(client: Any, prefix: str) -> list[dict[str, Any]]:
    """Every lease of the crawl, oldest first: request id, URL (read from the
    stored request), the worker holding it, its age (seconds since it was
    taken; ``None`` for a lease taken by a worker of an older version),
    seconds until it runs out (negative: ran out, not yet reclaimed by a
    take), host and profile. O(leased) in Redis."""
    with client.pipeline(transaction=True) as pipe:
        pipe.time()
        pipe.zrange(f"{prefix}leases", 0, -1, withscores=True)
        now, held = pipe.execute()
    now_ms = redis_time_ms(now)
    ids = [lease.decode() for lease, _ in held]
    with client.pipeline(transaction=False) as pipe:
        for lease in ids:
            pipe.hgetall(f"{prefix}lease:{lease}")
            pipe.hget(f"{prefix}req", lease)
        answers = pipe.execute()
    found = []
    for i, (lease, expiry) in enumerate(zip(ids, (e for _, e in held), strict=True)):
        info = {k.decode(): v.decode() for k, v in answers[2 * i].items()}
        taken = info.get("taken")
        found.append({
            "id": lease, "url": request_url(answers[2 * i + 1]), "owner": info.get("owner"),
            "age_s": round((now_ms - int(taken)) / 1000, 1) if taken else None,
            "expires_in_s": round((expiry - now_ms) / 1000, 1),
            "host": info.get("host"), "identity": info.get("identity") or None,
        })  # fmt: skip
    found.sort(key=lambda lease: -(lease["age_s"] or 0))
    return found


def _fingerprint(fields: Any) -> str | None:
    """Scrapy's default fingerprint (hex) of a stored request's URL, method and body."""
    try:
        from scrapy import Request
        from scrapy.utils.request import fingerprint

        request = Request(
            fields["url"], method=fields.get("method", "GET"), body=fields.get("body") or b""
        )
        return fingerprint(request).hex()
    except Exception:  # noqa: BLE001 - not a request Scrapy can build: no fingerprint
        return None


def _stored_fields(data: bytes | None) -> Any:
    if not data or data.startswith(FEED_MARK):
        return None
    try:
        return _NoImportUnpickler(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - not a stored request
        return None


def poisoned(client: Any, prefix: str) -> list[dict[str, Any]]:
    """The crawl's poisoned requests, oldest first: id, URL, Scrapy's default
    fingerprint, why (its leases that ran out), when (UTC, ISO 8601) and how
    long ago (seconds), and whether a worker is failing it now (``leased``)."""
    with client.pipeline(transaction=True) as pipe:
        pipe.time()
        pipe.hgetall(f"{prefix}poisoned")
        now, records = pipe.execute()
    now_ms = redis_time_ms(now)
    ids = sorted((k.decode() for k in records), key=lambda i: (len(i), i))
    with client.pipeline(transaction=False) as pipe:
        for request in ids:
            pipe.hget(f"{prefix}req", request)
            pipe.zscore(f"{prefix}leases", request)
        answers = pipe.execute()
    found = []
    for i, request in enumerate(ids):
        record = json.loads(records[request.encode()])
        data = answers[2 * i]
        fields = _stored_fields(data)
        at_ms = int(record["at"])
        found.append({
            "id": request, "url": request_url(data),
            "fingerprint": _fingerprint(fields) if isinstance(fields, dict) else None,
            "why": f"its lease ran out {record['deliveries']} times (every worker that took it "
                   "stopped before finishing it)",
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at_ms / 1000)),
            "age_s": round((now_ms - at_ms) / 1000, 1),
            "leased": answers[2 * i + 1] is not None,
        })  # fmt: skip
    found.sort(key=lambda record: -record["age_s"])
    return found


def settle_poisoned(client: Any, prefix: str, ids: list[str], action: str) -> list[str]:
    """Requeue (``action = "requeue"``) or drop (``"drop"``) the poisoned
    requests ``ids`` (:data:`~scrapy_cdp_pool.cluster.scripts.POISONED`); the ids done."""
    if not ids:
        return []
    script = client.register_script(POISONED_SCRIPT)
    done = script(keys=[route_key(prefix)], args=[prefix, action, *ids])
    return [item.decode() for item in done]
