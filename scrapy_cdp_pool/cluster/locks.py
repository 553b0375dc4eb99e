"""ClusterProfileLocks: the crawler's profile locks, held in Redis fleet-wide.

Requests taken from the cluster frontier get their profile's lock in the same
Lua step as the take (token ``cluster:<lease>``): the scheduler's finish hook
gives it back with the host slot, so :meth:`release` of such a token only
says yes. A request downloaded without the scheduler
(``engine.download_async``) locks its profile here, with a fencing token of
its own (renewed with the worker's leases, :attr:`direct`). When Redis cannot
be reached, a profile counts as busy and cannot be locked.
"""

from __future__ import annotations

from scrapy_cdp_pool.cluster.keys import glob_escaped, profile_lock_key
from scrapy_cdp_pool.cluster.link import ClusterLink
from scrapy_cdp_pool.errors import RedisUnavailable

_QUEUED_PREFIX = "cluster:"


class ClusterProfileLocks:
    def __init__(self, link: ClusterLink) -> None:
        self.link = link
        #: profile -> fencing token of the locks taken outside the queue
        self.direct: dict[str, int] = {}
        self._tokens: dict[str, str] = {}  # profile -> the caller's token

    def try_acquire(self, profile: str, token: str) -> bool:
        if token.startswith(_QUEUED_PREFIX):
            return True  # taken with the request
        if self._tokens.get(profile) == token:
            return True
        try:
            fence = self.link.call("lock", lambda: self.link.shards.lock_profile(profile))
        except RedisUnavailable:
            return False
        if fence is None:
            return False
        self.direct[profile] = fence
        self._tokens[profile] = token
        return True

    def release(self, profile: str, token: str) -> bool:
        if token.startswith(_QUEUED_PREFIX):
            return True  # given back by the scheduler's finish hook
        if self._tokens.get(profile) != token:
            return False
        fence = self.direct.pop(profile)
        del self._tokens[profile]
        try:
            self.link.call("unlock", lambda: self.link.shards.unlock_profile(profile, fence))
        except RedisUnavailable:
            pass  # its lease runs out
        return True

    def is_busy(self, profile: str) -> bool:
        key = profile_lock_key(self.link.shards.prefix_of_profile(profile), profile)
        try:
            return bool(self.link.call("busy", lambda: self.link.client.exists(key)))
        except RedisUnavailable:
            return True

    def busy(self) -> frozenset[str]:
        found: set[str] = set()
        for bucket_prefix in self.link.shards.prefixes:
            prefix = profile_lock_key(bucket_prefix, "")
            try:
                keys = self.link.call(
                    "busy",
                    lambda prefix=prefix: list(  # type: ignore[misc]
                        self.link.client.scan_iter(match=glob_escaped(prefix) + "*", count=1000)
                    ),
                )
            except RedisUnavailable:
                return frozenset()
            found.update(key.decode()[len(prefix) :] for key in keys)
        return frozenset(found)
