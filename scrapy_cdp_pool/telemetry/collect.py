"""Read a :class:`~scrapy_cdp_pool.telemetry.sample.StatusSample` from a running
crawler: its engine, scheduler, scraper, stats, its process, and its CDP pool.

Reading only: nothing here changes the crawl. Every part copes with not being
there yet (no engine, no pool, pool not started) or any more (spider closed).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.pool.connection import ConnectionState
from scrapy_cdp_pool.browser.pool.pool import ConnectionPool, PoolState
from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.scrapy_internals import (
    active_download_count,
    running_scheduler,
    scheduler_queues,
    scraper_load,
)
from scrapy_cdp_pool.shared.process_memory import (
    MB,
    TreeMemory,
    added,
    process_rss_bytes,
    trees_memory,
)
from scrapy_cdp_pool.telemetry.sample import ConnectionStatus, EndpointStatus, StatusSample

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.core.runtime import CrawlerRuntime

#: Attribute a scheduler queue exposes to report requests it holds back because
#: their gate is closed (profile busy, host paused):
#: :attr:`ProfileAwarePriorityQueue.waiting
#: <scrapy_cdp_pool.core.queue.ProfileAwarePriorityQueue.waiting>`;
#: 0 for any other queue.
PROFILE_WAITING_ATTRIBUTE = "waiting"


@dataclass(frozen=True)
class ServerReading:
    """The pool's CDP server at one instant.

    ``server``: ``"embedded"``, ``"remote"`` or ``None`` (no pool, or not
    started). ``memory`` is the embedded server's process tree (with its
    dedicated servers' trees added, see ``pool/dedicated.py``), ``None`` for a
    remote endpoint or a server that is not running.
    """

    server: str | None
    kind: str | None
    memory: TreeMemory | None


def read_server(
    pool: ConnectionPool | None, others: Iterable[ConnectionPool] = ()
) -> ServerReading:
    """Measure the pool's server: the embedded server's whole process tree
    through psutil; nothing for remote endpoints (no CDP server publishes its
    memory: Lightpanda's ``/metrics`` has no RSS, Chromium's CDP no process
    memory). ``others``: the crawl's other pools (the render ladder's
    Chromium): their embedded servers are measured with it, and their kind
    joins its (``lightpanda+chromium``)."""
    if pool is None or pool.state is PoolState.NEW:
        return ServerReading(None, None, None)
    embedded = pool.server
    if embedded is not None:
        pids = pool.server_pids()
        reading = ServerReading("embedded", embedded.kind, trees_memory(pids) if pids else None)
        return with_other_servers(reading, others)
    kinds = sorted({info.kind for info in pool.infos if info is not None})
    return ServerReading("remote", ",".join(kinds) or None, None)


def with_other_servers(reading: ServerReading, others: Iterable[ConnectionPool]) -> ServerReading:
    """``reading`` (the pool's embedded server, measured) with the embedded
    servers of the crawl's ``others`` pools measured and added, their kinds
    joined to its (``lightpanda+chromium``); a reading of no embedded server
    is returned as it is."""
    if reading.server != "embedded":
        return reading
    pids: list[int] = []
    kinds = [str(reading.kind)]
    for other in others:
        if other.server is not None and other.state is not PoolState.NEW:
            pids += other.server_pids()
            kinds.append(other.server.kind)
    if len(kinds) == 1:
        return reading
    memory = added([reading.memory, trees_memory(pids) if pids else None])
    return ServerReading("embedded", "+".join(kinds), memory)


def profile_waiting(scheduler: Any) -> int:
    """Requests waiting because their profile is busy: the sum of the
    :data:`PROFILE_WAITING_ATTRIBUTE` of the scheduler's memory and disk
    queues (``mqs``, ``dqs``), 0 where a queue has none."""
    total = 0
    for queue in scheduler_queues(scheduler):
        value = getattr(queue, PROFILE_WAITING_ATTRIBUTE, 0)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total


def _length(queue: Any) -> int | None:
    if queue is None:
        return None
    try:
        return len(queue)
    except TypeError:  # a scheduler without __len__
        return None


class StatusCollector:
    """Builds samples for one crawler; keeps the previous sample's counts to
    give rates per minute over the time between two samples."""

    def __init__(self, crawler: Crawler, runtime: CrawlerRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.concurrent_requests = crawler.settings.getint("CONCURRENT_REQUESTS")
        self.max_active_size = crawler.settings.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE")
        self._started = time.monotonic()
        self._previous = (self._started, 0, 0)

    def restart_clock(self) -> None:
        """Count elapsed time and the first rates from now (engine start)."""
        self._started = time.monotonic()
        stats = self.crawler.stats
        self._previous = (
            self._started,
            int(stats.get_value("response_received_count", 0)),
            int(stats.get_value("item_scraped_count", 0)),
        )

    def collect(self, event: str, server: ServerReading | None = None) -> StatusSample:
        """A sample now. ``server``: a reading just taken (the memory guard's),
        to measure the server once for both."""
        now = time.monotonic()
        crawler = self.crawler
        stats = crawler.stats
        responses = int(stats.get_value("response_received_count", 0))
        items = int(stats.get_value("item_scraped_count", 0))
        since, responses_before, items_before = self._previous
        window_s = now - since
        per_minute = 60.0 / window_s if window_s > 0 else 0.0
        self._previous = (now, responses, items)

        active_downloads = active_download_count(crawler)
        scheduler = running_scheduler(crawler)
        load = scraper_load(crawler)
        memory_queue, disk_queue = scheduler_queues(scheduler)
        pool = self.runtime.pool
        if server is None:
            server = read_server(pool, self.runtime.other_pools())
        crawler_rss = process_rss_bytes()
        budget = self.runtime.budget
        return StatusSample(
            timestamp=datetime.now(UTC).isoformat(timespec="milliseconds"),
            event=event,
            elapsed_s=round(now - self._started, 3),
            active_downloads=active_downloads,
            concurrent_requests=self.concurrent_requests,
            scheduler_requests=_length(scheduler),
            scheduler_memory_requests=_length(memory_queue),
            scheduler_disk_requests=_length(disk_queue),
            identity_waiting_requests=profile_waiting(scheduler),
            **self._scraper_fields(load),
            responses=responses,
            items=items,
            responses_per_minute=round((responses - responses_before) * per_minute, 1),
            items_per_minute=round((items - items_before) * per_minute, 1),
            retries=int(stats.get_value("retry/count", 0)),
            download_errors=int(stats.get_value("downloader/exception_count", 0)),
            crawler_rss_mb=None if crawler_rss is None else round(crawler_rss / MB, 1),
            **_server_fields(server),
            **_pool_fields(pool, len(self.runtime.live_pages.open)),
            **_budget_fields(budget),
        )

    def _scraper_fields(self, load: Any) -> dict[str, Any]:
        """The scraper's load (Scrapy's ``SCRAPER_SLOT_MAX_ACTIVE_SIZE``), ``None`` unknown."""
        return {
            "scraper_active_size_bytes": load.active_size if load is not None else None,
            "scraper_max_active_size_bytes": (
                load.max_active_size if load is not None else self.max_active_size
            ),
            "scraper_needs_backout": load.needs_backout if load is not None else None,
        }


def _server_fields(server: ServerReading) -> dict[str, Any]:
    """The browser server's fields of a :class:`StatusSample` (MB)."""
    memory = server.memory
    return {
        "server": server.server,
        "server_kind": server.kind,
        "server_memory_mb": None if memory is None else round(memory.memory_mb, 1),
        "server_memory_source": (
            "n/a" if server.server == "remote" else memory.source if memory else None
        ),
        "server_rss_mb": None if memory is None else round(memory.rss_mb, 1),
        "server_pss_mb": (
            None if memory is None or memory.pss_mb is None else round(memory.pss_mb, 1)
        ),
        "server_processes": None if memory is None else memory.processes,
    }


def _pool_fields(pool: ConnectionPool | None, live_pages: int) -> dict[str, Any]:
    """The pool's fields of a :class:`StatusSample` (none: no pool yet)."""
    return {
        "pool_state": pool.state.value if pool is not None else None,
        "pages_in_flight": pool.pages_in_flight if pool is not None else 0,
        "live_pages": live_pages,
        "pool_waiting_leases": pool.waiting if pool is not None else 0,
        "pool_holds": tuple(sorted(pool.holds)) if pool is not None else (),
        "connections": _connections(pool),
        "endpoints": _endpoints(pool),
        "dedicated_servers": (
            len(pool.dedicated.pools) if pool is not None and pool.dedicated else 0
        ),
    }


def _budget_fields(budget: Any) -> dict[str, Any]:
    """The page budget's fields of a :class:`StatusSample` (``None``: no budget)."""
    return {
        "budget_pages_in_flight": budget.current if budget is not None else None,
        "budget_desired": budget.desired if budget is not None else None,
        "budget_min": budget.min if budget is not None else None,
        "budget_max": budget.max if budget is not None else None,
        "budget_overloaded": budget.overloaded if budget is not None else None,
    }


def _connections(pool: ConnectionPool | None) -> tuple[ConnectionStatus, ...]:
    if pool is None:
        return ()
    return tuple(
        ConnectionStatus(
            connection=c.index,
            endpoint=pool.endpoint_name(c.endpoint_index),
            state=c.state.value,
            open_contexts=c.open_contexts,
            open_pages=c.open_pages,
        )
        for c in pool.connections
    )


def _endpoints(pool: ConnectionPool | None) -> tuple[EndpointStatus, ...]:
    if pool is None:
        return ()
    rows = []
    for index, endpoint in enumerate(pool.endpoints):
        on_it = [c for c in pool.connections if c.endpoint_index == index]
        info = pool.infos[index] if index < len(pool.infos) else None
        rows.append(
            EndpointStatus(
                endpoint=redact_url(endpoint),  # a remote endpoint's token stays out
                kind=info.kind if info is not None else None,
                connections=len(on_it),
                connections_ready=sum(1 for c in on_it if c.state is ConnectionState.READY),
                open_contexts=sum(c.open_contexts for c in on_it),
                open_pages=sum(c.open_pages for c in on_it),
            )
        )
    return tuple(rows)
