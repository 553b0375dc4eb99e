"""EngineStatusExtension: the engine's queues, the scraper's active size and the
CDP server's memory side by side, as one INFO line every
``CDP_POOL_STATUS_INTERVAL_SECONDS``, at ``spider_idle`` and at
``engine_stopped``; as JSON lines in ``CDP_POOL_STATUS_FILE``; as maxima in the
stats; and the memory guard (``CDP_POOL_SERVER_MEMORY_LIMIT_MB``).

Installed by :class:`~scrapy_cdp_pool.Addon`; remove it with
``EXTENSIONS = {"scrapy_cdp_pool.telemetry.EngineStatusExtension": None}``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.utils.asyncio import create_looping_call

from scrapy_cdp_pool.browser.pool.pool import PoolState
from scrapy_cdp_pool.core.runtime import CrawlerRuntime, runtime_of
from scrapy_cdp_pool.scrapy_internals import active_download_count, running_scheduler, scraper_load
from scrapy_cdp_pool.shared.disk_full import is_disk_full, stop_for_full_disk
from scrapy_cdp_pool.shared.process_memory import MB, process_rss_bytes
from scrapy_cdp_pool.telemetry.collect import (
    ServerReading,
    StatusCollector,
    read_server,
    with_other_servers,
)
from scrapy_cdp_pool.telemetry.memory_guard import MemoryGuard
from scrapy_cdp_pool.telemetry.sample import StatusSample
from scrapy_cdp_pool.telemetry.signals import status_sampled
from scrapy_cdp_pool.telemetry.status_file import StatusFile

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

logger = logging.getLogger(__name__)


@dataclass
class Maxima:
    """Peaks seen so far. Engine figures are read at every scheduled request,
    request reaching the downloader and response received; memory at every
    sample and memory guard check."""

    server_rss_mb: float | None = None
    server_pss_mb: float | None = None
    crawler_rss_mb: float | None = None
    scraper_active_size_bytes: int = 0
    active_downloads: int = 0
    scheduler_requests: int = 0

    def memory(self, reading: ServerReading | None, crawler_rss_mb: float | None) -> None:
        if reading is not None and reading.memory is not None:
            self.server_rss_mb = _max(self.server_rss_mb, round(reading.memory.rss_mb, 1))
            pss_mb = reading.memory.pss_mb
            if pss_mb is not None:
                self.server_pss_mb = _max(self.server_pss_mb, round(pss_mb, 1))
        if crawler_rss_mb is not None:
            self.crawler_rss_mb = _max(self.crawler_rss_mb, crawler_rss_mb)

    def stats(self) -> dict[str, float | int]:
        """The stats to set, ``cdp_pool/<name>_max``; memory ones only where
        measured (never 0 for "not measured")."""
        values: dict[str, float | int | None] = {
            "cdp_pool/server_rss_mb_max": self.server_rss_mb,
            "cdp_pool/server_pss_mb_max": self.server_pss_mb,
            "cdp_pool/crawler_rss_mb_max": self.crawler_rss_mb,
            "cdp_pool/scraper_active_size_bytes_max": self.scraper_active_size_bytes,
            "cdp_pool/active_downloads_max": self.active_downloads,
            "cdp_pool/scheduler_requests_max": self.scheduler_requests,
        }
        return {k: v for k, v in values.items() if v is not None}


def _max(current: float | None, value: float) -> float:
    return value if current is None else max(current, value)


class EngineStatusExtension:
    """Periodic status of the engine, the scraper, the crawler process and the
    CDP server (see :class:`~scrapy_cdp_pool.telemetry.sample.StatusSample` for
    every field and :meth:`StatusSample.log_message` for the line).

    Stats set at ``spider_closed`` when the crawl used the pool (rendered at
    least one request): ``cdp_pool/server_rss_mb_max``,
    ``cdp_pool/server_pss_mb_max`` (embedded server only, whole process tree),
    ``cdp_pool/crawler_rss_mb_max``, ``cdp_pool/scraper_active_size_bytes_max``,
    ``cdp_pool/active_downloads_max``, ``cdp_pool/scheduler_requests_max``,
    ``cdp_pool/status_samples``, and with a memory limit
    ``cdp_pool/memory_guard/holds`` and ``cdp_pool/memory_guard/held_seconds``.

    :raises ValueError: a ``CDP_POOL_*`` setting is invalid.
    :raises OSError: ``CDP_POOL_STATUS_FILE`` cannot be opened for appending.
    """

    def __init__(self, crawler: Crawler, runtime: CrawlerRuntime) -> None:
        config = runtime.config
        self.crawler = crawler
        self.runtime = runtime
        self.interval_s = config.telemetry.status_interval_s
        self.collector = StatusCollector(crawler, runtime)
        self.maxima = Maxima()
        self.samples = 0
        self.guard = (
            MemoryGuard(config.telemetry.server_memory_limit_mb, crawler=crawler)
            if config.telemetry.server_memory_limit_mb is not None
            else None
        )
        self.status_file = (
            StatusFile(config.telemetry.status_file) if config.telemetry.status_file else None
        )
        self.config_status_file = config.telemetry.status_file
        self._task: AsyncioLoopingCall | LoopingCall | None = None
        self._last: StatusSample | None = None
        connect = crawler.signals.connect
        connect(self.engine_started, signal=signals.engine_started)
        connect(self.spider_idle, signal=signals.spider_idle)
        connect(self.spider_closed, signal=signals.spider_closed)
        connect(self.engine_stopped, signal=signals.engine_stopped)
        connect(self._track_engine, signal=signals.request_scheduled)
        connect(self._on_request_reached_downloader, signal=signals.request_reached_downloader)
        connect(self._track_engine, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, runtime_of(crawler))

    # Signals ---------------------------------------------------------------

    def engine_started(self) -> None:
        self.collector.restart_clock()
        self._task = create_looping_call(self._on_interval)
        self._task.start(self.interval_s, now=True)

    def spider_idle(self) -> None:
        last = self._last
        if last is not None and last.event == "idle" and last.responses == _responses(self):
            return  # still idle since the last idle line (DontCloseSpider keeps it so)
        self.sample("idle")

    def spider_closed(self) -> None:
        """Before Scrapy dumps its stats: the last memory figures and the
        maxima. The periodic lines end here; the last comes at engine stop."""
        self._stop_interval()
        pool = self.runtime.pool
        reading = read_server(pool)
        rss = process_rss_bytes()
        self.maxima.memory(reading, None if rss is None else round(rss / MB, 1))
        if pool is None or pool.state is PoolState.NEW:
            return  # the crawl rendered nothing: no cdp_pool/ stats
        stats = self.crawler.stats
        for key, value in self.maxima.stats().items():
            stats.max_value(key, value)
        stats.set_value("cdp_pool/status_samples", self.samples)
        if self.guard is not None:
            stats.set_value("cdp_pool/memory_guard/holds", self.guard.holds)
            stats.set_value("cdp_pool/memory_guard/held_seconds", round(self.guard.held_s, 3))

    def engine_stopped(self) -> None:
        """The last line (before the download handlers close the pool)."""
        self._stop_interval()
        self.sample("stop")
        if self.guard is not None:
            self.guard.stop()
        if self.status_file is not None:
            self.status_file.close()

    def _stop_interval(self) -> None:
        if self._task is not None and self._task.running:
            self._task.stop()
        self._task = None

    def _on_interval(self) -> None:
        self.sample("interval")

    def _on_request_reached_downloader(self) -> None:
        self._track_engine()
        if self.guard is not None:
            reading = self.guard.check_soon(self.runtime.pool)
            self.maxima.memory(reading, None)

    def _track_engine(self) -> None:
        crawler = self.crawler
        maxima = self.maxima
        maxima.active_downloads = max(maxima.active_downloads, active_download_count(crawler))
        load = scraper_load(crawler)
        if load is not None:
            maxima.scraper_active_size_bytes = max(
                maxima.scraper_active_size_bytes, load.active_size
            )
        scheduler = running_scheduler(crawler)
        if scheduler is not None:
            try:
                queued = len(scheduler)
            except TypeError:  # a scheduler without __len__
                return
            maxima.scheduler_requests = max(maxima.scheduler_requests, queued)

    # Sampling --------------------------------------------------------------

    def sample(self, event: str) -> StatusSample:
        """Take, log and record one sample (``event``: ``interval``, ``idle``
        or ``stop``)."""
        pool = self.runtime.pool
        reading = read_server(pool)
        if self.guard is not None:
            self.guard.check(pool, reading)  # the pool's own server: the one it can relieve
        # the status line counts every server of the crawl (the pool's is not measured twice)
        reading = with_other_servers(reading, self.runtime.other_pools())
        sample = self.collector.collect(event, reading)
        self._last = sample
        self.samples += 1
        self.maxima.memory(reading, sample.crawler_rss_mb)
        self._track_engine()
        message, args = sample.log_message()
        logger.info(message, *args, extra={"crawler": self.crawler})
        if self.status_file is not None:
            try:
                self.status_file.write(sample)
            except OSError as e:
                if not is_disk_full(e):
                    raise
                self.status_file.abandon()
                self.status_file = None
                stop_for_full_disk(
                    self.crawler, str(self.config_status_file), "a line of CDP_POOL_STATUS_FILE", e
                )
        # For the Prometheus metrics (telemetry/metrics.py): the same figures.
        self.crawler.signals.send_catch_log(status_sampled, sample=sample)
        return sample


def _responses(extension: EngineStatusExtension) -> int:
    return int(extension.crawler.stats.get_value("response_received_count", 0))
