"""A crawl that does not persist: scrapy-redis's ``SCHEDULER_PERSIST = False``
and ``SCHEDULER_FLUSH_ON_START = True``, honoured by the cluster at start.

A cluster crawl persists by default (its keys stay until ``scrapy-cdp-pool
cluster purge``; starting the workers again resumes it). A project that sets
``SCHEDULER_PERSIST = False`` or ``SCHEDULER_FLUSH_ON_START = True`` (as
scrapy-redis projects do) gets a fresh crawl on each run instead: the first
worker to start, when no other worker of the crawl is live (a heartbeat within
a lease), deletes the crawl's queue, leases, fingerprints and counters (every
key of the crawl but the stored profiles and their health, the fleet budget and
an operator's pause) and counts itself live, in one Lua step, so a worker
starting beside it joins the fresh crawl instead of flushing it again.
scrapy-redis flushes a non-persistent crawl when it closes; the cluster does
it when the next run starts (a crawl stopped mid-way is flushed too then), so
the finished crawl's figures stay readable with ``cluster status`` until then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.settings import BaseSettings

from scrapy_cdp_pool.cluster.keys import glob_escaped

if TYPE_CHECKING:
    from scrapy_cdp_pool.cluster.shards import Buckets

#: what a flush keeps, after the prefix (profiles stored in Redis and their
#: health, the fleet budget, an operator's pause; the live workers' heartbeats)
KEPT = (
    "profile:", "identity:", "profiles", "profile_health:", "budget:", "paused", "workers",
    "shards",
)  # fmt: skip

FLUSH_IF_ALONE = r"""--!df flags=allow-undeclared-keys
local P = ARGV[1]
local pattern = ARGV[2]
local lease_ms = tonumber(ARGV[3])
local worker = ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', P .. 'workers', now - lease_ms, '+inf')
for _, other in ipairs(live) do
  if other ~= worker then return -1 end
end
local kept = {}
for i = 5, #ARGV do kept[#kept + 1] = ARGV[i] end
local deleted = 0
local cursor = '0'
repeat
  local found = redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)
  cursor = found[1]
  for _, key in ipairs(found[2]) do
    local rest = string.sub(key, #P + 1)
    local keep = false
    for _, k in ipairs(kept) do
      if string.sub(rest, 1, #k) == k then keep = true end
    end
    if not keep then
      redis.call('UNLINK', key)
      deleted = deleted + 1
    end
  end
until cursor == '0'
redis.call('ZREMRANGEBYSCORE', P .. 'workers', '-inf', now - lease_ms)
redis.call('ZADD', P .. 'workers', now, worker)
return deleted
"""


def flushes_at_start(settings: BaseSettings) -> str | None:
    """The setting that asks for a fresh crawl (``"SCHEDULER_FLUSH_ON_START"``
    or ``"SCHEDULER_PERSIST"``), or ``None``. ``SCHEDULER_PERSIST`` counts only
    when set to false: unset, the cluster persists (scrapy-redis's default is
    false, but that setting is scrapy-redis's, not Scrapy's)."""
    if settings.getbool("SCHEDULER_FLUSH_ON_START"):
        return "SCHEDULER_FLUSH_ON_START"
    if settings.get("SCHEDULER_PERSIST") is not None and not settings.getbool("SCHEDULER_PERSIST"):
        return "SCHEDULER_PERSIST"
    return None


def flush_if_alone(client: Any, route_key: str, prefix: str, worker: str, lease_ms: int) -> int:
    """Delete the crawl's keys but :data:`KEPT` when no other worker is live,
    and count ``worker`` live; how many keys were deleted, -1 when another
    worker is live (nothing deleted)."""
    script = client.register_script(FLUSH_IF_ALONE)
    pattern = f"{glob_escaped(prefix)}*"
    return int(script(keys=[route_key], args=[prefix, pattern, lease_ms, worker, *KEPT]))


def flush_buckets(buckets: Buckets) -> int:
    """:func:`flush_if_alone` on bucket 0 (whose live workers decide), then,
    when it flushed, on every other bucket of the crawl
    (:mod:`~scrapy_cdp_pool.cluster.shards`): the keys deleted in all, or -1."""
    home = buckets.home
    deleted = flush_if_alone(home.client, home.route_key, home.prefix, home.worker, home.lease_ms)
    if deleted < 0:
        return deleted
    for frontier in buckets.frontiers[1:]:
        # a lease of 0 ms: no other worker counts as live there (bucket 0 said so)
        deleted += flush_if_alone(
            frontier.client, frontier.route_key, frontier.prefix, frontier.worker, 0
        )
    return deleted
