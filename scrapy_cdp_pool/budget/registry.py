"""Which budget a crawler uses, and the budgets shared by ``CDP_POOL_NAME``.

A named budget is built from the first crawler's settings; a later crawler
with the same name and other budget settings is refused with a
:class:`ValueError` naming both crawlers and the setting. A name is free
again once no live crawler uses it.

Nothing here builds a budget itself (the caller gives a factory), so
telemetry can read :func:`budget_for` without importing the budget package's
machinery.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.budget.budget import ConcurrencyBudget

BudgetSettings = tuple[tuple[str, Any], ...]
"""``((setting name, value), ...)``: what a named budget is built from."""


@dataclass(eq=False)
class _Named:
    budget: ConcurrencyBudget
    settings: BudgetSettings
    owner: str
    users: weakref.WeakSet[Crawler] = field(default_factory=weakref.WeakSet)


_named: dict[str, _Named] = {}
_by_crawler: weakref.WeakKeyDictionary[Crawler, ConcurrencyBudget] = weakref.WeakKeyDictionary()


def crawler_name(crawler: Crawler) -> str:
    """The crawler's spider name, for messages."""
    return str(getattr(crawler.spidercls, "name", None) or crawler.spidercls.__name__)


def budget_for(crawler: Crawler) -> ConcurrencyBudget | None:
    """The budget the crawler is (or was) attached to, if any."""
    return _by_crawler.get(crawler)


def use_budget(crawler: Crawler, budget: ConcurrencyBudget) -> None:
    """Record that ``crawler`` uses ``budget`` (for :func:`budget_for`)."""
    _by_crawler[crawler] = budget


def acquire_named(
    name: str,
    crawler: Crawler,
    settings: BudgetSettings,
    factory: Callable[[], ConcurrencyBudget],
) -> ConcurrencyBudget:
    """The budget shared under ``name``, built with ``factory`` for the first
    crawler.

    :raises ValueError: the name's budget was built from other settings.
    """
    entry = _named.get(name)
    if entry is not None and not entry.users:
        entry = None  # its crawlers are gone
    if entry is None:
        entry = _named[name] = _Named(factory(), settings, crawler_name(crawler))
    else:
        theirs = dict(entry.settings)
        for setting, value in settings:
            if theirs.get(setting) != value:
                raise ValueError(
                    f"CDP_POOL_NAME = {name!r}: crawler {crawler_name(crawler)!r} sets "
                    f"{setting} = {value!r}, but the shared budget comes from crawler "
                    f"{entry.owner!r}, which sets {theirs.get(setting)!r}; crawlers sharing "
                    f"a name must agree on it (allowed: {theirs.get(setting)!r}), or use "
                    "another CDP_POOL_NAME"
                )
    entry.users.add(crawler)
    return entry.budget


def release_named(name: str, crawler: Crawler) -> None:
    """``crawler`` is done with the budget shared under ``name``."""
    entry = _named.get(name)
    if entry is None:
        return
    entry.users.discard(crawler)
    if not entry.users:
        del _named[name]
