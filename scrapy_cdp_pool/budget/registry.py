"""Which budget a crawler uses: :func:`budget_for`, the documented accessor.

The budget itself is held by the crawler's runtime (``runtime.budget``,
:mod:`scrapy_cdp_pool.core.runtime`); budgets shared by ``CDP_POOL_NAME`` are in
:mod:`scrapy_cdp_pool.core.sharing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_cdp_pool.budget.budget import ConcurrencyBudget
from scrapy_cdp_pool.core.runtime import RuntimeOwner
from scrapy_cdp_pool.core.sharing import crawler_name

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["budget_for", "crawler_name"]


def budget_for(crawler: Crawler) -> ConcurrencyBudget | None:
    """The budget the crawler is (or was) attached to, if any (``None`` too
    for a crawler without the add-on)."""
    owner = crawler.get_addon(RuntimeOwner)
    runtime = owner.runtime if owner is not None else None
    budget = runtime.budget if runtime is not None else None
    return budget if isinstance(budget, ConcurrencyBudget) else None
