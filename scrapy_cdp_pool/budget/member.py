"""BudgetMember: one crawler's share of a :class:`~scrapy_cdp_pool.ConcurrencyBudget`.

Its methods are the crawler's scheduling gate hooks
(:class:`~scrapy_cdp_pool.core.gates.RequestGates`): :meth:`may_start`
is asked before the scheduler queue hands out a request, :meth:`on_dequeued`
and :meth:`on_finished` see a request start and end. A request that will be
rendered counts as a page in flight from the moment the queue hands it out to
the end of its download, whatever the outcome; a token in its meta ties the
end to the start, as :class:`~scrapy_cdp_pool.resilience.HostLimits` does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy import Request

from scrapy_cdp_pool.render import is_rendered

if TYPE_CHECKING:
    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
    from scrapy_cdp_pool.budget.budget import ConcurrencyBudget

TOKEN_META_KEY = "_cdp_budget_token"  # noqa: S105 - a meta key, not a secret


class BudgetMember:
    """Made by :meth:`ConcurrencyBudget.attach`; gone at :meth:`ConcurrencyBudget.detach`.

    ``name``: the crawler's spider name (logs). ``wake``: asks the crawler's
    engine to pull from its scheduler again. ``pool``: the crawler's pool, if
    any (the monitor measures its server). ``render_all``: the crawler's
    ``CDP_POOL_RENDER_ALL``, to tell which requests will be rendered.

    Counters: :attr:`in_flight` (pages now), :attr:`in_flight_max`,
    :attr:`pages` (pages started), :attr:`waits` (times its scheduler was held
    back by the budget). :attr:`waiting`: held back since its last request
    (to be woken); :attr:`starving`: held back with no page in flight (the
    next free page is kept for it).
    """

    def __init__(
        self,
        budget: ConcurrencyBudget,
        name: str,
        *,
        wake: Callable[[], None],
        pool: Callable[[], ConnectionPool | None],
        render_all: bool,
    ) -> None:
        self.budget = budget
        self.name = name
        self.render_all = render_all
        self.attached = True
        self.in_flight = 0
        self.in_flight_max = 0
        self.pages = 0
        self.waits = 0
        self.waiting = False
        self.starving = False
        self._wake = wake
        self._pool = pool
        self._tokens: set[str] = set()
        self._next = itertools.count(1)

    def renders(self, request: Request) -> bool:
        """Whether the download handler will render ``request`` (the rule of
        :meth:`CDPDownloadHandler.should_render
        <scrapy_cdp_pool.core.handler.CDPDownloadHandler.should_render>`)."""
        return is_rendered(request, self.render_all)

    def may_start(self) -> bool:
        """Start check: whether the crawler may take a request from its
        scheduler now. When not, it waits to be woken by a page finishing
        (in any crawler of the budget) or the budget growing."""
        if not self.attached or self.budget.allows(self):
            return True
        if not self.waiting:
            self.waiting = True
            self.waits += 1
        self.starving = self.in_flight == 0
        return False

    def on_dequeued(self, request: Request, now: float) -> None:
        """Dequeue hook: a request of this crawler starts."""
        self.waiting = self.starving = False
        # A copy of a request that never finished (a middleware replaced it)
        # still holds its page: give it back first.
        self.release(request)
        if not self.attached or not self.renders(request):
            return
        token = f"{id(self)}:{next(self._next)}"
        request.meta[TOKEN_META_KEY] = token
        self._tokens.add(token)
        self.budget.page_started(self)

    def on_finished(self, request: Request) -> None:
        """Finish hook: the download of ``request`` is over."""
        self.release(request)

    def release(self, request: Request) -> bool:
        """Give back the page ``request`` holds, if any; ``True`` if it held one."""
        token = request.meta.pop(TOKEN_META_KEY, None)
        if token is None or token not in self._tokens:
            return False
        self._tokens.discard(token)
        self.budget.page_finished(self)
        return True

    def wake(self) -> None:
        self._wake()

    def pool(self) -> ConnectionPool | None:
        return self._pool()

    def forget_pages(self) -> int:
        """Drop every page this member holds (at detach); returns how many."""
        count = len(self._tokens)
        self._tokens.clear()
        self.in_flight = 0
        self.waiting = self.starving = False
        return count
