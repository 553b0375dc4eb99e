"""FleetBudgetExtension: attaches a crawler to the cluster's
:class:`~scrapy_cdp_pool.cluster.budget.FleetBudget` when
``CDP_POOL_CLUSTER_BUDGET_MAX`` is set (with ``CDP_POOL_CLUSTER_REDIS_URL``).

As :class:`~scrapy_cdp_pool.budget.extension.BudgetExtension` does for the
local budget: the crawler's scheduling gates get the member's start check and
its dequeue and finish hooks; the crawler detaches at ``spider_closed`` (its
shares given back), after the stats are set:

- ``cdp_pool/cluster/budget/max``: the cluster's bound, pages;
- ``cdp_pool/cluster/budget/crawler_pages_in_flight_max``,
  ``.../crawler_pages``: this worker's most pages at once, its pages;
- ``cdp_pool/cluster/budget/waits``: times this worker was held back;
- ``cdp_pool/cluster/budget_leases_lost``: shares that expired while their
  page ran (only when some did).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from scrapy_cdp_pool.budget.registry import crawler_name
from scrapy_cdp_pool.cluster.budget import FleetBudget
from scrapy_cdp_pool.cluster.ops_keys import cluster_prefix, worker_id
from scrapy_cdp_pool.cluster.redis_client import CALL_TIMEOUT_S, connect, connect_async
from scrapy_cdp_pool.core.gates import RequestGates
from scrapy_cdp_pool.core.runtime import runtime_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class FleetBudgetExtension:
    """See the module. :raises ValueError: a setting is invalid, or the
    cluster's workers run with another ``CDP_POOL_CLUSTER_BUDGET_MAX``."""

    def __init__(
        self, crawler: Crawler, budget: FleetBudget, gates: RequestGates, render_all: bool
    ) -> None:
        self.crawler = crawler
        self.budget = budget
        self.member = budget.attach(crawler_name(crawler), wake=gates.wake, render_all=render_all)
        gates.add_start_check(self.member.may_start)
        gates.add_dequeue_hook(self.member.on_dequeued)
        gates.add_finish_hook(self.member.on_finished)
        connect = crawler.signals.connect
        connect(self.request_scheduled, signal=signals.request_scheduled)
        connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        config = runtime.config
        if config.cluster.redis_url is None or config.cluster.budget_max is None:
            raise NotConfigured
        budget = FleetBudget(
            connect_async(config.cluster.redis_url, CALL_TIMEOUT_S),
            cluster_prefix(config, crawler),
            max=config.cluster.budget_max,
            owner=worker_id(),
            lease_s=config.cluster.budget_lease_s,
            crawler=crawler,
        )
        with connect(config.cluster.redis_url, None) as client:  # refused now, not mid-crawl
            client.set(budget.max_key, config.cluster.budget_max, nx=True)
            stored = client.get(budget.max_key)
        budget.check_stored_max(stored)
        return cls(crawler, budget, runtime.gates, config.render_all)

    def request_scheduled(self, request: Request) -> None:
        """A request back in the scheduler still holding a share gives it back."""
        self.member.release(request)

    async def spider_closed(self) -> None:
        member, stats = self.member, self.crawler.stats
        values = {
            "max": self.budget.max,
            "crawler_pages_in_flight_max": member.in_flight_max,
            "crawler_pages": member.pages,
            "waits": member.waits,
        }
        for key, value in values.items():
            stats.set_value(f"cdp_pool/cluster/budget/{key}", value)
        self.budget.detach(member)
        await member.drain()
        await self.budget.redis.aclose()
