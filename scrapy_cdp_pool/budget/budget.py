"""ConcurrencyBudget: one bound on the pages in flight across every crawler
attached to it, scaled between ``min`` and ``max`` by the load.

A crawler asks the budget before its scheduler queue hands out a request
(:class:`~scrapy_cdp_pool.budget.member.BudgetMember`), so a crawler whose share
is used up takes nothing from its scheduler and no request waits holding a
download slot. When a page ends anywhere, the crawlers that were held back are
woken (their engines pull again); nothing polls.

Rules, with ``total`` the pages in flight under the budget:

- nothing starts while ``total >= max``;
- a crawler with no page in flight may start one (up to ``max``, the crawlers
  already held back with none going first): each attached crawler is
  guaranteed a page, so one that joins late is not starved;
- otherwise a crawler may start one while ``total`` plus the crawlers held back
  with no page in flight stays below ``desired``: a page that ends is kept for
  a crawler that has none.

So ``total`` never exceeds ``max``, and exceeds ``desired`` only by the
guaranteed pages. With autoscaling, ``desired`` moves every ``interval_s``
(see :meth:`ConcurrencyBudget.tick`).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.budget.load import LoadSample, LoadThresholds
from scrapy_cdp_pool.budget.member import BudgetMember
from scrapy_cdp_pool.budget.monitor import LoadMonitor
from scrapy_cdp_pool.budget.scaling import BudgetState, check_limits, clamp, next_desired
from scrapy_cdp_pool.settings.parse import SharedBudget

if TYPE_CHECKING:
    from typing import Self

    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool

logger = logging.getLogger(__name__)

#: Recorded states kept (the oldest are dropped).
MAX_STATES = 10_000


class ConcurrencyBudget(SharedBudget):
    """Bounds the pages in flight across the crawlers attached to it.

    Give crawlers the same instance in ``CDP_POOL_BUDGET``, or let crawlers
    with ``CDP_POOL_AUTOSCALE = True`` and the same ``CDP_POOL_NAME`` share
    one built from the first crawler's settings.

    ``min``/``max``: bounds of ``desired`` (pages), changeable while crawls
    run. ``desired``: the starting value (default ``max``). ``autoscale``:
    adjust ``desired`` every ``interval_s`` seconds from the load measured
    while crawlers are attached, against ``thresholds``.

    The instance outlives crawls: keep it to read :attr:`states` or to reuse it.
    Copies of settings (Scrapy copies them for each crawler) keep the same
    instance.

    :raises ValueError: a bound or interval out of range, naming it.
    """

    def __init__(
        self,
        *,
        min: int = 1,
        max: int,
        desired: int | None = None,
        autoscale: bool = True,
        interval_s: float = 10.0,
        thresholds: LoadThresholds | None = None,
        name: str = "budget",
    ) -> None:
        check_limits(min, max)
        if not interval_s > 0:
            raise ValueError(f"interval_s: {interval_s!r} is not a number of seconds > 0")
        self.name = name
        self.thresholds = thresholds if thresholds is not None else LoadThresholds()
        self._autoscale = autoscale
        self._interval_s = float(interval_s)
        self._min = min
        self._max = max
        self._desired = clamp(max if desired is None else desired, min, max)
        self._members: list[BudgetMember] = []
        self._in_flight = 0
        self._peak_since_sample = 0
        self.in_flight_max = 0
        self.ticks = 0
        self.scale_ups = 0
        self.scale_downs = 0
        self.overloaded_ticks = 0
        self._overloaded: tuple[str, ...] = ()
        self._states: collections.deque[BudgetState] = collections.deque(maxlen=MAX_STATES)
        self._monitor: LoadMonitor | None = None
        self._record("start")

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self

    def __repr__(self) -> str:
        return (
            f"<ConcurrencyBudget {self.name!r} {self._in_flight} in flight, desired "
            f"{self._desired} (min {self._min}, max {self._max})>"
        )

    # Limits ----------------------------------------------------------------

    @property
    def min(self) -> int:
        return self._min

    @min.setter
    def min(self, value: int) -> None:
        self.set_limits(min=value)

    @property
    def max(self) -> int:
        return self._max

    @max.setter
    def max(self, value: int) -> None:
        self.set_limits(max=value)

    def set_limits(self, *, min: int | None = None, max: int | None = None) -> None:
        """Change ``min`` and/or ``max`` (while crawls run too); ``desired``
        is moved inside them. Pages already in flight finish; a lower ``max``
        holds back new ones until the total is under it.

        :raises ValueError: ``min`` < 1, or ``max`` < ``min``.
        """
        low = self._min if min is None else min
        high = self._max if max is None else max
        check_limits(low, high)
        before = self._desired
        # A fixed budget at its max follows it; an autoscaled one gets there by ticks.
        target = high if not self._autoscale and before == self._max else before
        self._min, self._max = low, high
        self._desired = clamp(target, low, high)
        self._record("limits")
        logger.info(
            "Concurrency budget %r: min %d, max %d, desired %d -> %d pages",
            self.name,
            low,
            high,
            before,
            self._desired,
        )
        self._wake_waiting()

    @property
    def desired(self) -> int:
        """Pages the budget lets in flight now (autoscaled within ``min``..``max``)."""
        return self._desired

    @property
    def current(self) -> int:
        """Pages in flight under the budget, all attached crawlers together."""
        return self._in_flight

    @property
    def overloaded(self) -> tuple[str, ...]:
        """The signals the last tick found overloaded (``"memory"``,
        ``"cpu"``, ``"loop_lag"``); empty when none."""
        return self._overloaded

    @property
    def autoscale(self) -> bool:
        return self._autoscale

    @property
    def interval_s(self) -> float:
        return self._interval_s

    @property
    def states(self) -> tuple[BudgetState, ...]:
        """Every recorded state, oldest first: the start, each tick, each
        change of limits."""
        return tuple(self._states)

    @property
    def crawlers(self) -> tuple[str, ...]:
        """Names of the attached crawlers' spiders."""
        return tuple(member.name for member in self._members)

    # Crawlers ----------------------------------------------------------------

    def attach(
        self,
        name: str,
        *,
        wake: Callable[[], None],
        pool: Callable[[], ConnectionPool | None] = lambda: None,
        render_all: bool = False,
    ) -> BudgetMember:
        """Attach a crawler (see :class:`BudgetMember` for the arguments)."""
        member = BudgetMember(self, name, wake=wake, pool=pool, render_all=render_all)
        self._members.append(member)
        return member

    def detach(self, member: BudgetMember) -> None:
        """The crawler is done: its pages no longer count, the others are
        woken, and the monitor stops with the last crawler. Idempotent."""
        if member not in self._members:
            return
        self._members.remove(member)
        member.attached = False
        self._in_flight -= member.forget_pages()
        if not self._members and self._monitor is not None:
            self._monitor.stop()
        self._wake_waiting()

    def allows(self, member: BudgetMember) -> bool:
        """Whether ``member`` may start a page now (the rules in the module
        documentation)."""
        total = self._in_flight
        if total >= self._max:
            return False
        starving = sum(
            1 for m in self._members if m is not member and m.starving and m.in_flight == 0
        )
        if member.in_flight == 0:  # guaranteed a page; those already waiting first
            return member.starving or total + starving < self._max
        return total + starving < self._desired

    def page_started(self, member: BudgetMember) -> None:
        member.in_flight += 1
        member.pages += 1
        member.in_flight_max = max(member.in_flight_max, member.in_flight)
        self._in_flight += 1
        self.in_flight_max = max(self.in_flight_max, self._in_flight)
        self._peak_since_sample = max(self._peak_since_sample, self._in_flight)

    def page_finished(self, member: BudgetMember) -> None:
        member.in_flight -= 1
        self._in_flight -= 1
        self._wake_waiting()

    def _wake_waiting(self) -> None:
        for member in list(self._members):
            if member.waiting:
                member.wake()

    # Autoscaling -------------------------------------------------------------

    def start_monitor(self) -> None:
        """Start measuring the load (with ``autoscale``, once a crawler is
        attached and the event loop runs; the extension calls it at
        ``engine_started``). Idempotent."""
        if not self._autoscale or not self._members:
            return
        if self._monitor is None:
            self._monitor = LoadMonitor(self)
        self._monitor.start()

    def take_peak(self) -> int:
        """The most pages in flight since the previous call (for a sample)."""
        peak = max(self._peak_since_sample, self._in_flight)
        self._peak_since_sample = self._in_flight
        return peak

    def pools(self) -> Iterator[ConnectionPool]:
        """The attached crawlers' pools, each once (a shared pool is one)."""
        seen: set[int] = set()
        for member in self._members:
            pool = member.pool()
            if pool is not None and id(pool) not in seen:
                seen.add(id(pool))
                yield pool

    def tick(
        self, samples: Sequence[LoadSample], system_memory_mb: float | None = None
    ) -> BudgetState:
        """One autoscaling step over ``samples`` (the window since the last
        tick): ``desired`` goes down by ~5% (at least 1, not below ``min``)
        when a signal is overloaded, up by ~5% (not above ``max``) when none
        is and the most pages in flight reached 90% of ``desired``; else it
        stays (:func:`~scrapy_cdp_pool.budget.scaling.next_desired`).
        ``system_memory_mb`` is for a memory bound given as a share. Returns
        the recorded state."""
        self.ticks += 1
        overloaded = self.thresholds.overloaded(samples, system_memory_mb)
        self.overloaded_ticks += bool(overloaded)
        peak = max((s.pages_in_flight for s in samples), default=self._in_flight)
        before = self._desired
        self._desired = next_desired(
            before, self._min, self._max, overloaded=bool(overloaded), peak=peak
        )
        if self._desired < before:
            self.scale_downs += 1
        elif self._desired > before:
            self.scale_ups += 1
        if overloaded != self._overloaded:
            logger.info(
                "Concurrency budget %r: %s; desired %d -> %d pages (min %d, max %d)",
                self.name,
                f"overloaded ({', '.join(overloaded)})" if overloaded else "no longer overloaded",
                before,
                self._desired,
                self._min,
                self._max,
            )
        else:
            logger.debug(
                "Concurrency budget %r tick %d: overloaded %s, peak %d pages, "
                "desired %d -> %d pages (min %d, max %d)",
                self.name,
                self.ticks,
                ", ".join(overloaded) or "no",
                peak,
                before,
                self._desired,
                self._min,
                self._max,
            )
        self._overloaded = overloaded
        state = self._record("tick")
        if self._desired > before:
            self._wake_waiting()
        return state

    def _record(self, reason: str) -> BudgetState:
        state = BudgetState(
            reason=reason,
            tick=self.ticks,
            current=self._in_flight,
            desired=self._desired,
            min=self._min,
            max=self._max,
            overloaded=self._overloaded,
            crawlers=len(self._members),
        )
        self._states.append(state)
        return state
