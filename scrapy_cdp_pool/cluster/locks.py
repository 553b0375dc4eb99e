"""ClusterIdentityLocks: the crawler's identity locks, held in Redis fleet-wide.

Requests taken from the cluster frontier get their identity's lock in the same
Lua step as the take (token ``cluster:<lease>``): the scheduler's finish hook
gives it back with the host slot, so :meth:`release` of such a token only
says yes. A request downloaded without the scheduler
(``engine.download_async``) locks its identity here, with a fencing token of
its own (renewed with the worker's leases, :attr:`direct`). When Redis cannot
be reached, an identity counts as busy and cannot be locked.
"""

from __future__ import annotations

from scrapy_cdp_pool.cluster.keys import identity_key
from scrapy_cdp_pool.cluster.link import ClusterLink
from scrapy_cdp_pool.errors import RedisUnavailable

_QUEUED_PREFIX = "cluster:"


class ClusterIdentityLocks:
    def __init__(self, link: ClusterLink) -> None:
        self.link = link
        #: identity -> fencing token of the locks taken outside the queue
        self.direct: dict[str, int] = {}
        self._tokens: dict[str, str] = {}  # identity -> the caller's token

    def try_acquire(self, identity: str, token: str) -> bool:
        if token.startswith(_QUEUED_PREFIX):
            return True  # taken with the request
        if self._tokens.get(identity) == token:
            return True
        try:
            fence = self.link.call("lock", lambda: self.link.frontier.lock_identity(identity))
        except RedisUnavailable:
            return False
        if fence is None:
            return False
        self.direct[identity] = fence
        self._tokens[identity] = token
        return True

    def release(self, identity: str, token: str) -> bool:
        if token.startswith(_QUEUED_PREFIX):
            return True  # given back by the scheduler's finish hook
        if self._tokens.get(identity) != token:
            return False
        fence = self.direct.pop(identity)
        del self._tokens[identity]
        try:
            self.link.call("unlock", lambda: self.link.frontier.unlock_identity(identity, fence))
        except RedisUnavailable:
            pass  # its lease runs out
        return True

    def is_busy(self, identity: str) -> bool:
        key = identity_key(self.link.frontier.prefix, identity)
        try:
            return bool(self.link.call("busy", lambda: self.link.client.exists(key)))
        except RedisUnavailable:
            return True

    def busy(self) -> frozenset[str]:
        prefix = identity_key(self.link.frontier.prefix, "")
        try:
            keys = self.link.call(
                "busy", lambda: list(self.link.client.scan_iter(match=prefix + "*", count=1000))
            )
        except RedisUnavailable:
            return frozenset()
        return frozenset(key.decode()[len(prefix) :] for key in keys)
