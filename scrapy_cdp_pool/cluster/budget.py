"""FleetBudget: the pages in flight across every worker of a cluster bounded
by one number (``CDP_POOL_CLUSTER_BUDGET_MAX``), as leases in Redis.

Keys (``P`` is the cluster's prefix):

- ``P budget:leases``: a sorted set, one member per page a worker may have in
  flight (``{worker}:{n}``), scored by its lease's expiry (Redis's clock,
  Unix milliseconds). A worker renews its members every third of
  ``CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS``; the members of a worker that died
  (SIGKILL, partition) expire and are dropped by the next take, so its share
  comes back after one lease at most. About 130 bytes of Redis memory per
  member (measured with 20,000 members).
- ``P budget:max``: the bound, set by the first worker; a worker started with
  another value is refused (``ValueError`` naming both).
- ``P budget:released``: a channel; a page that ends publishes on it, so a
  worker waiting for a share tries again at once (else when the earliest
  lease would expire).

A take is one Lua script (drop the expired members, add one if fewer than the
bound), so the bound holds whatever the number of workers.

:class:`FleetBudgetMember` has the interface of the local
:class:`~scrapy_cdp_pool.budget.member.BudgetMember` (the crawler's scheduling
gate hooks: :meth:`~FleetBudgetMember.may_start`,
:meth:`~FleetBudgetMember.on_dequeued`, :meth:`~FleetBudgetMember.on_finished`,
:meth:`~FleetBudgetMember.release`), so a crawler attaches to it as to a
:class:`~scrapy_cdp_pool.ConcurrencyBudget`; with both, a page needs a share of
each. A rendered request counts from the moment its scheduler hands it out to
the end of its download, whatever the outcome.

Its start check cannot wait on Redis, so a worker takes a share ahead: when its
check says no, it takes one lease in the background and wakes its engine
when it has it; the next rendered request uses it. So a worker holds at most
one share it does not use yet, given back when still unused at two renewals in
a row (a third to two thirds of a lease: its crawler had nothing to render).
A page that ends while its worker has no spare keeps its share as the spare;
one that ends while it has one keeps its share :data:`KEEP_S` longer, as the
spare after the next page starts (else it is given back then); a share serves
up to :data:`RECYCLE_PAGES` pages in a row, then it is given back. So a busy
worker's page costs the budget no round trip most of the time (before: a take
and a give-back each), and a worker holds at most two shares it does not use,
the second for :data:`KEEP_S` at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisClusterException, RedisError
from scrapy import Request

from scrapy_cdp_pool.render import is_rendered

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)

#: retrying a take Redis did not answer: first wait, longest wait (seconds)
RETRY_FIRST_S = 0.5
RETRY_MAX_S = 30.0
RECYCLE_PAGES = 8
"""Pages one share serves in a row: a page that ends keeps its share as the
worker's spare (no give-back, no take: two round trips saved) when the worker
has no spare, until the share served this many pages; then it is given back
(published, so a worker waiting for a share gets its chance)."""
KEEP_S = 0.25
"""How long a page's share is kept when it ends while its worker already
holds a spare, seconds: a page that starts meanwhile makes it the next spare
(no take); else it is given back (published)."""
TOKEN_META_KEY = "_cdp_fleet_budget_lease"  # noqa: S105 - a meta key, not a secret
#: the stat counting leases that expired while their page ran (the worker
#: could not renew them in time: the bound may have been passed meanwhile)
LEASES_LOST_STAT = "cdp_pool/cluster/budget_leases_lost"

# KEYS: leases. ARGV: max, member, lease ms. Returns {1, count} or {0, ms to
# the earliest expiry}.
_TAKE = """
local now = redis.call('TIME')
local now_ms = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
local count = redis.call('ZCARD', KEYS[1])
if count < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[3]), ARGV[2])
  return {1, count + 1}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(first[2]) - now_ms}
"""

# KEYS: leases. ARGV: lease ms, members... Returns how many were gone.
_RENEW = """
local now = redis.call('TIME')
local until_ms = now[1] * 1000 + math.floor(now[2] / 1000) + tonumber(ARGV[1])
local gone = 0
for i = 2, #ARGV do
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', until_ms, ARGV[i]) == 0
     and not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    gone = gone + 1
  end
end
return gone
"""


# KEYS: leases. ARGV: the release channel, members: given back and announced,
# one round trip (a Redis Cluster's pipeline cannot carry the PUBLISH).
_GIVE_BACK = """
local gone = redis.call('ZREM', KEYS[1], unpack(ARGV, 2))
redis.call('PUBLISH', ARGV[1], #ARGV - 1)
return gone
"""


class FleetBudget:
    """One worker's view of the cluster's budget.

    ``redis``: a ``redis.asyncio.Redis`` client; ``prefix``: the cluster's key
    prefix; ``max``: pages in flight across the cluster; ``owner``: this
    worker's id; ``lease_s``: a share's lease, seconds.
    """

    def __init__(
        self,
        redis: Redis,
        prefix: str,
        *,
        max: int,
        owner: str,
        lease_s: float,
        crawler: Any = None,
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.max = max
        self.owner = owner
        self.lease_ms = int(lease_s * 1000)
        self.crawler = crawler
        self.leases_key = f"{prefix}budget:leases"
        self.max_key = f"{prefix}budget:max"
        self.channel = f"{prefix}budget:released"
        self._take = redis.register_script(_TAKE)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_GIVE_BACK)
        self._members: list[FleetBudgetMember] = []

    def check_stored_max(self, stored: bytes | str | int | None) -> None:
        """Check this worker's bound against the cluster's (``P budget:max``,
        stored by the first worker).

        :raises ValueError: the cluster's bound is another number.
        """
        if stored is not None and int(stored) != self.max:
            raise ValueError(
                f"CDP_POOL_CLUSTER_BUDGET_MAX = {self.max}, but the cluster's workers run with "
                f"{int(stored)} (key {self.max_key}); every worker must set the same bound "
                f"(allowed: {int(stored)}), or purge the cluster's keys first"
            )

    def attach(
        self, name: str, *, wake: Callable[[], None], render_all: bool = False, **_: Any
    ) -> FleetBudgetMember:
        """A crawler's member (the arguments of ``ConcurrencyBudget.attach``)."""
        member = FleetBudgetMember(self, name, wake=wake, render_all=render_all)
        self._members.append(member)
        return member

    def detach(self, member: FleetBudgetMember) -> None:
        if member in self._members:
            self._members.remove(member)
            member.stop()

    async def in_flight(self) -> int:
        """Shares taken across the cluster now (expired ones not counted)."""
        now_s, now_us = await self.redis.time()
        return int(await self.redis.zcount(self.leases_key, now_s * 1000 + now_us // 1000, "+inf"))


class FleetBudgetMember:
    """One crawler's share of a :class:`FleetBudget` (see the module).

    Counters as :class:`~scrapy_cdp_pool.budget.member.BudgetMember`:
    :attr:`in_flight`, :attr:`in_flight_max`, :attr:`pages`, :attr:`waits`;
    and :attr:`leases_lost`.
    """

    def __init__(
        self, budget: FleetBudget, name: str, *, wake: Callable[[], None], render_all: bool
    ) -> None:
        self.budget = budget
        self.name = name
        self.render_all = render_all
        self.attached = True
        self.in_flight = 0
        self.in_flight_max = 0
        self.pages = 0
        self.waits = 0
        self.leases_lost = 0
        self.waiting = False
        self._wake = wake
        self._spare: str | None = None  # a share taken ahead, not used yet
        self._idle_spare: str | None = None  # the spare seen at the last renewal
        self._kept: str | None = None  # an ended page's share, kept KEEP_S for the next
        self._kept_timer: asyncio.TimerHandle | None = None
        self._held: dict[str, str] = {}  # request token -> lease member
        self._uses: dict[str, int] = {}  # lease member -> pages it served
        self._next = itertools.count(1)
        self._taker: asyncio.Task[None] | None = None
        self._renewer: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # Gate hooks --------------------------------------------------------------

    def may_start(self) -> bool:
        """Whether the crawler may take a request now: it has a share
        ready. When not, one is taken in the background, then the engine is
        woken."""
        if not self.attached or self._spare is not None or self._use_kept():
            return True
        if not self.waiting:
            self.waiting = True
            self.waits += 1
        if self._taker is None or self._taker.done():
            self._taker = asyncio.get_running_loop().create_task(self._take_share())
        return False

    def on_dequeued(self, request: Request, now: float) -> None:
        """A request starts: a rendered one uses the spare share."""
        self.waiting = False
        self.release(request)  # a copy of one that never finished
        if not self.attached or not is_rendered(request, self.render_all):
            return
        lease = self._spare
        if lease is None:  # the share was lost meanwhile (detached): count nothing
            return
        self._spare = None
        self._idle_spare = None  # used: not idle
        self._uses[lease] = self._uses.get(lease, 0) + 1
        self._use_kept()  # the next spare, if an ended page's share is kept
        token = f"{id(self)}:{next(self._next)}"
        request.meta[TOKEN_META_KEY] = token
        self._held[token] = lease
        self.in_flight += 1
        self.pages += 1
        self.in_flight_max = max(self.in_flight_max, self.in_flight)
        self._ensure_renewer()

    def on_finished(self, request: Request) -> None:
        self.release(request)

    def release(self, request: Request) -> bool:
        """Give back the share ``request`` holds, if any."""
        token = request.meta.pop(TOKEN_META_KEY, None)
        lease = self._held.pop(token, None) if token is not None else None
        if lease is None:
            return False
        self.in_flight -= 1
        if self.attached and self._uses.get(lease, 0) < RECYCLE_PAGES:
            if self._spare is None:
                self._spare = lease  # kept for the next page: no give-back, no take
                self._wake()
                return True
            if self._kept is None and self._keep(lease):
                return True
        self._uses.pop(lease, None)
        self._spawn(self._give_back([lease]))
        return True

    def _unused_and_held(self) -> list[str]:
        return [*self._held.values(), *(lease for lease in (self._spare, self._kept) if lease)]

    def _keep(self, lease: str) -> bool:
        """Keep ``lease`` for :data:`KEEP_S`: the spare of the page after
        the next one, if it starts meanwhile; else given back."""
        try:
            timer = asyncio.get_running_loop().call_later(KEEP_S, self._give_back_kept, lease)
        except RuntimeError:  # no loop: the crawl is over
            return False
        self._kept, self._kept_timer = lease, timer
        return True

    def _use_kept(self) -> bool:
        """The kept share becomes the spare (none was); whether there was one."""
        lease = self._kept
        if lease is None or self._spare is not None:
            return False
        self._kept = None
        if self._kept_timer is not None:
            self._kept_timer.cancel()
            self._kept_timer = None
        self._spare = lease
        return True

    def _give_back_kept(self, lease: str) -> None:
        if self._kept != lease:
            return
        self._kept, self._kept_timer = None, None
        self._uses.pop(lease, None)
        self._spawn(self._give_back([lease]))

    def wake(self) -> None:
        self._wake()

    # Redis -------------------------------------------------------------------

    async def _take_share(self) -> None:
        budget = self.budget
        pubsub = None
        backoff_s = RETRY_FIRST_S
        try:
            while self.attached and self.waiting and self._spare is None:
                member = f"{budget.owner}:{next(self._next)}"
                try:
                    taken, value = await budget._take(
                        keys=[budget.leases_key], args=[budget.max, member, budget.lease_ms]
                    )
                except (RedisError, RedisClusterException, OSError) as e:
                    if backoff_s == RETRY_FIRST_S:  # once per outage
                        logger.warning(
                            "Cluster budget: Redis did not answer a take (%s); no new page "
                            "starts on this worker until it does (retrying, %.1f s to %.0f s "
                            "apart)",
                            type(e).__name__,
                            RETRY_FIRST_S,
                            RETRY_MAX_S,
                            extra={"crawler": budget.crawler},
                        )
                    if pubsub is not None:
                        with contextlib.suppress(RedisError, RedisClusterException, OSError):
                            await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # typed in redis 8.2
                        pubsub = None
                    await asyncio.sleep(backoff_s)
                    backoff_s = min(backoff_s * 2, RETRY_MAX_S)
                    continue
                if backoff_s != RETRY_FIRST_S:
                    backoff_s = RETRY_FIRST_S
                    logger.info(
                        "Cluster budget: Redis answers again", extra={"crawler": budget.crawler}
                    )
                if taken:
                    self._spare = member
                    self._ensure_renewer()
                    self._wake()
                    return
                if pubsub is None:
                    pubsub = budget.redis.pubsub()
                    await pubsub.subscribe(budget.channel)
                    continue  # a release may have come before the subscription
                wait_s = max(0.001, min(int(value), budget.lease_ms) / 1000)
                try:
                    await _next_message(pubsub, wait_s)
                except (RedisError, RedisClusterException, OSError):
                    with contextlib.suppress(RedisError, RedisClusterException, OSError):
                        await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # typed in redis 8.2
                    pubsub = None  # subscribed again at the next refusal
        finally:
            if pubsub is not None:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # typed in redis 8.2

    async def _give_back(self, leases: list[str]) -> None:
        budget = self.budget
        try:
            await budget._release(keys=[budget.leases_key], args=[budget.channel, *leases])
        except (RedisError, RedisClusterException, OSError) as e:
            logger.warning(
                "Cluster budget: cannot give back %d share(s) (%s); they expire within "
                "CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS",
                len(leases),
                e,
                extra={"crawler": budget.crawler},
            )

    def _ensure_renewer(self) -> None:
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew_leases())

    async def _renew_leases(self) -> None:
        budget = self.budget
        while self.attached:
            await asyncio.sleep(budget.lease_ms / 3000)
            spare = self._spare
            if spare is not None and spare == self._idle_spare:
                self._spare = None  # unused for a whole period: let others have it
                self._uses.pop(spare, None)
                self._spawn(self._give_back([spare]))
            self._idle_spare = self._spare
            leases = [
                *self._held.values(),
                *(lease for lease in (self._spare, self._kept) if lease),
            ]
            if not leases:
                continue
            try:
                gone = await budget._renew(
                    keys=[budget.leases_key], args=[budget.lease_ms, *leases]
                )
            except (RedisError, RedisClusterException, OSError) as e:
                logger.warning(
                    "Cluster budget: cannot renew %d share(s): %s",
                    len(leases),
                    e,
                    extra={"crawler": budget.crawler},
                )
                continue
            if gone:
                self.leases_lost += int(gone)
                stats = getattr(budget.crawler, "stats", None)
                if stats is not None:
                    stats.inc_value(LEASES_LOST_STAT, int(gone))
                logger.warning(
                    "Cluster budget: %d share(s) expired before they were renewed (Redis was "
                    "slow or unreachable): the cluster may pass CDP_POOL_CLUSTER_BUDGET_MAX "
                    "until their pages end",
                    gone,
                    extra={"crawler": budget.crawler},
                )

    def _spawn(self, coro: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coro)
        except RuntimeError:  # no loop: the crawl is over; the leases expire
            coro.close()
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def stop(self) -> None:
        """Detach: give back every share, stop renewing."""
        self.attached = False
        leases = self._unused_and_held()
        if self._kept_timer is not None:
            self._kept_timer.cancel()
        self._held.clear()
        self._uses.clear()
        self._spare = self._kept = self._kept_timer = None
        self.in_flight = 0
        for task in (self._taker, self._renewer):
            if task is not None:
                task.cancel()
        if leases:
            self._spawn(self._give_back(leases))

    async def drain(self) -> None:
        """Wait for the give-backs under way (at close)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


async def _next_message(pubsub: Any, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for a message on ``pubsub`` (a release)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (left := deadline - loop.time()) > 0:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
        if message is not None:
            return
