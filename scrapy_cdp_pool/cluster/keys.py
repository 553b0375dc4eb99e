"""Names of a cluster crawl's Redis keys (the layout is in :mod:`scrapy_cdp_pool.cluster`)."""

from __future__ import annotations

SEP = "|"
"""Separates a gate key's parts: ``<host>|<not before, ms or "">|<profile>``.
Host names and numbers hold no ``|``; the profile (last) may."""


def key_prefix(name: str) -> str:
    """``cdp_pool:{<name>}:``: the prefix of every key of the cluster crawl
    ``name`` (``CDP_POOL_CLUSTER_NAME``). The braces are a Redis Cluster hash
    tag: all keys of one crawl live in one slot, so the scripts may touch any
    of them."""
    return f"cdp_pool:{{{name}}}:"


PROFILE_COPY_META_KEY = "_cdp_cluster_profile_copy"
"""The copy of the request's profile the take read with it (the profile lock
taken in the same step: no other worker can save it back meanwhile):
``(state, identity, retired, consecutive failures)`` as stored (each of the
first three ``None`` when absent; the count 0 when absent), read by
:class:`~scrapy_cdp_pool.cluster.profile_hook.SharedProfilesMiddleware`
instead of a round trip of its own."""


def profile_lock_key(prefix: str, profile: str) -> str:
    """The profile lock: a hash ``owner`` (worker id), ``token`` (fencing
    token from ``INCR <prefix>fence``), ``lease`` (request id), with a PEXPIRE."""
    return f"{prefix}identity:{profile}"


def gate_of(host: str, profile: str, not_before_ms: int | None = None) -> str:
    nb = "" if not_before_ms is None else str(not_before_ms)
    return f"{host}{SEP}{nb}{SEP}{profile}"


def split_gate(gate: str) -> tuple[str, int | None, str]:
    """``(host, not_before_ms or None, profile)``."""
    host, _, rest = gate.partition(SEP)
    nb, _, profile = rest.partition(SEP)
    return host, (int(nb) if nb else None), profile


_GLOB = str.maketrans({c: "\\" + c for c in "*?[]\\"})


def glob_escaped(text: str) -> str:
    """``text`` with the characters of a ``SCAN MATCH`` pattern escaped (``*``,
    ``?``, ``[``, ``]``, backslash): a crawl's name matched as itself."""
    return text.translate(_GLOB)


def redis_time_ms(answer: tuple[int | bytes, int | bytes]) -> int:
    """Milliseconds since the epoch from Redis ``TIME``'s ``(seconds,
    microseconds)`` (the server's clock, the one leases and heartbeats use)."""
    seconds, micros = answer
    return int(seconds) * 1000 + int(micros) // 1000
