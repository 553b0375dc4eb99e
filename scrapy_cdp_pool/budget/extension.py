"""BudgetExtension: attaches a crawler to its
:class:`~scrapy_cdp_pool.ConcurrencyBudget` (installed by the add-on).

The budget is, in this order: the instance in ``CDP_POOL_BUDGET``; with
``CDP_POOL_AUTOSCALE = True``, the one shared under ``CDP_POOL_NAME`` (built
from the first crawler's settings) or, without a name, one of the crawler's
own. Without any, the extension is not configured.

The crawler's scheduling gates get the budget's start check and its dequeue
and finish hooks (:class:`~scrapy_cdp_pool.budget.member.BudgetMember`); the
budget's load monitor starts with the engine; the crawler detaches when its
spider closes, after the ``cdp_pool/budget/...`` stats are set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from scrapy_cdp_pool.browser.backends import backend_of
from scrapy_cdp_pool.budget.budget import ConcurrencyBudget
from scrapy_cdp_pool.budget.load import LoadThresholds
from scrapy_cdp_pool.core.runtime import CrawlerRuntime, runtime_of
from scrapy_cdp_pool.core.sharing import Settings, SharedByName, crawler_name
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

#: budgets shared under ``CDP_POOL_NAME`` (:class:`BudgetExtension`)
BUDGETS: SharedByName[ConcurrencyBudget] = SharedByName(
    "budget", "comes from crawler {owner!r}, which sets {theirs!r}", "crawlers sharing a name"
)


def pool_capacity(config: PoolConfig) -> int:
    """Pages the crawler's pool can hold at once: endpoints x connections x
    contexts per connection (one on the embedded Lightpanda). The default of
    ``CDP_POOL_BUDGET_MAX``."""
    endpoints = max(1, len(config.endpoints))
    one_context = not config.endpoints and backend_of(config).max_contexts_per_connection == 1
    contexts = 1 if one_context else config.contexts_per_connection
    return endpoints * config.connections * contexts


def budget_settings(config: PoolConfig) -> Settings:
    """The settings a budget is built from, as crawlers sharing it must agree."""
    return (
        ("CDP_POOL_BUDGET_MIN", config.budget.min),
        ("CDP_POOL_BUDGET_MAX", config.budget.max),
        ("CDP_POOL_AUTOSCALE_INTERVAL_SECONDS", config.budget.interval_s),
        ("CDP_POOL_SERVER_MEMORY_LIMIT_MB", config.telemetry.server_memory_limit_mb),
        ("CDP_POOL_AUTOSCALE_MEMORY_SHARE", config.budget.memory_share),
        ("CDP_POOL_AUTOSCALE_CPU_RATIO", config.budget.cpu_ratio),
        ("CDP_POOL_AUTOSCALE_LOOP_LAG_SECONDS", config.budget.loop_lag_s),
        ("CDP_POOL_AUTOSCALE_OVERLOADED_FRACTION", config.budget.overloaded_fraction),
    )


def budget_from_config(config: PoolConfig, name: str) -> ConcurrencyBudget:
    """An autoscaled budget built from the ``CDP_POOL_*`` settings."""
    high = config.budget.max if config.budget.max is not None else pool_capacity(config)
    return ConcurrencyBudget(
        min=config.budget.min,
        max=max(high, config.budget.min),
        autoscale=True,
        interval_s=config.budget.interval_s,
        thresholds=LoadThresholds(
            memory_limit_mb=config.telemetry.server_memory_limit_mb,
            memory_share=config.budget.memory_share,
            cpu_ratio=config.budget.cpu_ratio,
            loop_lag_s=config.budget.loop_lag_s,
            overloaded_fraction=config.budget.overloaded_fraction,
        ),
        name=name,
    )


class BudgetExtension:
    """Stats set at ``spider_closed``: ``cdp_pool/budget/min``, ``.../max``,
    ``.../desired`` (at the end), ``.../pages_in_flight_max`` (all crawlers of
    the budget), ``.../crawler_pages_in_flight_max`` and ``.../crawler_pages``
    (this crawler), ``.../waits`` (times this crawler's scheduler was held back),
    and with autoscaling ``.../ticks``, ``.../scale_ups``, ``.../scale_downs``,
    ``.../overloaded_ticks`` (while this crawler was attached).

    :raises ValueError: a ``CDP_POOL_*`` setting is invalid, or the budget
        shared under ``CDP_POOL_NAME`` was built from other settings.
    """

    def __init__(
        self,
        runtime: CrawlerRuntime,
        budget: ConcurrencyBudget,
        shared_name: str | None = None,
    ) -> None:
        crawler = self.crawler = runtime.crawler
        self.budget = budget
        self._shared_name = shared_name
        gates = runtime.gates
        self.member = budget.attach(
            crawler_name(crawler),
            wake=gates.wake,
            pool=lambda: runtime.pool,
            render_all=runtime.config.render_all,
        )
        runtime.budget = budget
        gates.add_start_check(self.member.may_start)
        gates.add_dequeue_hook(self.member.on_dequeued)
        gates.add_finish_hook(self.member.on_finished)
        self._counters = self._budget_counters()
        connect = crawler.signals.connect
        connect(self.engine_started, signal=signals.engine_started)
        connect(self.request_scheduled, signal=signals.request_scheduled)
        connect(self.spider_closed, signal=signals.spider_closed)
        connect(self.detach, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        config = runtime.config
        if isinstance(config.budget.shared, ConcurrencyBudget):  # the setting's type, checked
            return cls(runtime, config.budget.shared)
        if not config.budget.autoscale:
            raise NotConfigured  # no budget: the crawler scales on its own
        name = config.pool_name
        if name is None:
            return cls(runtime, budget_from_config(config, crawler_name(crawler)))
        budget = BUDGETS.join(
            name, crawler, budget_settings(config), lambda: budget_from_config(config, name)
        )
        return cls(runtime, budget, shared_name=name)

    def engine_started(self) -> None:
        self.budget.start_monitor()

    def request_scheduled(self, request: Request) -> None:
        """A request back in the scheduler still holding its page (a
        middleware returned it instead of a response) gives it back."""
        self.member.release(request)

    def spider_closed(self) -> None:
        budget, member = self.budget, self.member
        stats = self.crawler.stats
        values = {
            "min": budget.min,
            "max": budget.max,
            "desired": budget.desired,
            "pages_in_flight_max": budget.in_flight_max,
            "crawler_pages_in_flight_max": member.in_flight_max,
            "crawler_pages": member.pages,
            "waits": member.waits,
        }
        if budget.autoscale:
            for key, now, then in zip(
                ("ticks", "scale_ups", "scale_downs", "overloaded_ticks"),
                self._budget_counters(),
                self._counters,
                strict=True,
            ):
                values[key] = now - then
        for key, value in values.items():
            stats.set_value(f"cdp_pool/budget/{key}", value)
        self.detach()

    def detach(self) -> None:
        """Leave the budget (at spider close; engine stop if the spider never
        opened). Idempotent."""
        self.budget.detach(self.member)
        if self._shared_name is not None:
            BUDGETS.leave(self._shared_name, self.crawler)
            self._shared_name = None

    def _budget_counters(self) -> tuple[int, int, int, int]:
        budget = self.budget
        return budget.ticks, budget.scale_ups, budget.scale_downs, budget.overloaded_ticks
