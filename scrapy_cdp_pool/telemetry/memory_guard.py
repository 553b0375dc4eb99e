"""MemoryGuard: backpressure on new pages while the embedded CDP server uses
more memory than ``CDP_POOL_SERVER_MEMORY_LIMIT_MB``.

Above the limit the guard puts a hold on the pool (:meth:`ConnectionPool.hold`):
pages already open finish, new ones wait in arrival order, and the crawl goes
on once the server's memory is back under the limit. A warning says when it
holds and why; nothing is killed. Requests that wait longer than their
``DOWNLOAD_TIMEOUT`` fail with a timeout and are retried as usual.

A limit below what the server uses with no page open can never be met: when
the server measures above it on :data:`IDLE_CHECKS_TO_FAIL` rechecks in a row
while held with no page open (about 3 s after the first hold), the guard logs
an error naming the setting and the measured idle figure, lifts its hold and
closes the spider (reason ``cdp_pool_memory_limit_too_low``, stat
``cdp_pool/memory_guard/idle_mb``) instead of stalling the crawl.

The server's memory is its whole process tree, PSS where the OS gives it, else
RSS (see :mod:`scrapy_cdp_pool.shared.process_memory`). A remote endpoint's
memory cannot be measured: the limit is then not enforced, and a warning says
so once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from scrapy.utils.asyncio import create_looping_call

from scrapy_cdp_pool.telemetry.collect import ServerReading, read_server

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.utils.asyncio import AsyncioLoopingCall
    from twisted.internet.task import LoopingCall

    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
    from scrapy_cdp_pool.shared.process_memory import TreeMemory

logger = logging.getLogger(__name__)

#: The reason the guard gives :meth:`ConnectionPool.hold`; it shows in status lines.
HOLD_REASON = "server memory above CDP_POOL_SERVER_MEMORY_LIMIT_MB"
#: While holding, the server is measured again this often (seconds), so the
#: hold is lifted soon after the memory falls back even if no request arrives.
RECHECK_INTERVAL_S = 1.0
#: :meth:`MemoryGuard.check_soon` (called for each request reaching the
#: downloader) measures at most once per this many seconds.
MIN_CHECK_GAP_S = 0.1
#: A memory close to the limit goes over and under it again and again: each
#: hold is counted, but announced at WARNING (and its end at INFO) at most
#: once per this many seconds; the others are logged at DEBUG.
ANNOUNCE_EVERY_S = 60.0
#: Rechecks in a row (one per :data:`RECHECK_INTERVAL_S`) finding the server
#: above the limit with no page open before the limit is judged too low: a
#: browser frees a closed page's memory within a moment, not within seconds.
IDLE_CHECKS_TO_FAIL = 3
#: The spider's close reason when the limit is below the idle server.
CLOSE_REASON = "cdp_pool_memory_limit_too_low"


class MemoryGuard:
    """Holds the pool's new pages while the server is above ``limit_mb``
    (mebibytes).

    Counters for the stats: :attr:`holds` (times it started holding) and
    :attr:`held_s` (seconds spent holding, the current hold included).
    """

    def __init__(self, limit_mb: float, *, crawler: Crawler | None = None) -> None:
        self.limit_mb = limit_mb
        self.crawler = crawler
        self.holds = 0
        self._held_total_s = 0.0
        self._held_since: float | None = None
        self._held_pool: ConnectionPool | None = None
        self._recheck: AsyncioLoopingCall | LoopingCall | None = None
        self._last_check: float | None = None
        self._warned_remote = False
        self._warned_idle = False
        self._announced_at: float | None = None
        self._announced = False
        self._idle_checks = 0
        #: the idle server's memory (MB) when the limit was found below it
        self.too_low_mb: float | None = None

    @property
    def held(self) -> bool:
        """Whether the guard holds new pages right now."""
        return self._held_since is not None

    @property
    def held_s(self) -> float:
        current = time.monotonic() - self._held_since if self._held_since is not None else 0.0
        return self._held_total_s + current

    def check_soon(self, pool: ConnectionPool | None) -> ServerReading | None:
        """:meth:`check`, unless the last check is less than
        :data:`MIN_CHECK_GAP_S` old (then ``None``)."""
        if self._last_check is not None and time.monotonic() - self._last_check < MIN_CHECK_GAP_S:
            return None
        return self.check(pool)

    def check(
        self, pool: ConnectionPool | None, reading: ServerReading | None = None
    ) -> ServerReading | None:
        """Measure the server (or use ``reading``, just taken) and hold or
        release the pool's new pages. Returns the reading (``None`` without a
        pool)."""
        if pool is None:
            return None
        if reading is None:
            reading = read_server(pool)
        if reading.server is None:
            return reading  # the pool has not started: nothing to measure yet
        self._last_check = time.monotonic()
        if reading.server == "remote":
            self._warn_remote(reading)
            return reading
        memory = reading.memory
        if memory is None:
            return reading  # restarting: keep the hold as it is until it runs again
        if self.too_low_mb is not None:
            return reading  # the spider is closing
        if memory.memory_mb > self.limit_mb:
            self._hold(pool, memory)
        elif self.held:
            self._release(pool, memory)
        return reading

    def stop(self) -> None:
        """Stop re-measuring (at engine stop). A hold is left on the pool,
        which is closing: lifting it would start pages on a closing pool."""
        if self._recheck is not None and self._recheck.running:
            self._recheck.stop()
        self._recheck = None
        if self._held_since is not None:
            self._held_total_s += time.monotonic() - self._held_since
            self._held_since = None

    def _hold(self, pool: ConnectionPool, memory: TreeMemory) -> None:
        if self.held:
            self._idle_checks = self._idle_checks + 1 if pool.pages_in_flight == 0 else 0
            if self._idle_checks >= IDLE_CHECKS_TO_FAIL:
                self._too_low(
                    pool, memory, f"with no page open for {self._idle_checks} checks in a row"
                )
                return
            if pool.pages_in_flight == 0 and not self._warned_idle:
                self._warned_idle = True
                logger.warning(
                    "CDP server memory %.1f MB (%s) stays above "
                    "CDP_POOL_SERVER_MEMORY_LIMIT_MB = %g MB with no page open: the limit "
                    "may be too low for this server; new pages keep waiting",
                    memory.memory_mb,
                    memory.source.upper(),
                    self.limit_mb,
                    extra={"crawler": self.crawler},
                )
            return
        now = time.monotonic()
        self.holds += 1
        self._held_since = now
        self._held_pool = pool
        self._warned_idle = False
        pool.hold(HOLD_REASON)
        self._announced = self._announced_at is None or now - self._announced_at >= ANNOUNCE_EVERY_S
        if self._announced:
            self._announced_at = now
        logger.log(
            logging.WARNING if self._announced else logging.DEBUG,
            "CDP server memory %.1f MB (%s) is above CDP_POOL_SERVER_MEMORY_LIMIT_MB = %g MB: "
            "new pages wait until it falls back (%d pages open, %d waiting; hold #%d)",
            memory.memory_mb,
            memory.source.upper(),
            self.limit_mb,
            pool.pages_in_flight,
            pool.waiting,
            self.holds,
            extra={"crawler": self.crawler},
        )
        self._recheck = create_looping_call(self._recheck_now)
        self._recheck.start(RECHECK_INTERVAL_S, now=False)

    def _release(self, pool: ConnectionPool, memory: TreeMemory) -> None:
        held_since = self._held_since
        held_for_s = time.monotonic() - held_since if held_since is not None else 0.0
        self.stop()
        self._held_pool = None
        waiting = pool.waiting
        pool.unhold(HOLD_REASON)
        logger.log(
            logging.INFO if self._announced else logging.DEBUG,
            "CDP server memory %.1f MB (%s) is back under CDP_POOL_SERVER_MEMORY_LIMIT_MB = "
            "%g MB after %.1f s held: new pages start again (%d were waiting)",
            memory.memory_mb,
            memory.source.upper(),
            self.limit_mb,
            held_for_s,
            waiting,
            extra={"crawler": self.crawler},
        )

    def _too_low(self, pool: ConnectionPool, memory: TreeMemory, when: str) -> None:
        """The limit is below the idle server: say so, let waiting pages go
        (a quick shutdown) and close the spider."""
        self.too_low_mb = memory.memory_mb
        logger.error(
            "CDP_POOL_SERVER_MEMORY_LIMIT_MB = %g MB is below what the CDP server uses %s: "
            "%.1f MB (%s). The limit can never be met; raise it above that figure (plus what "
            "your pages need) or unset it. Closing the spider.",
            self.limit_mb,
            when,
            memory.memory_mb,
            memory.source.upper(),
            extra={"crawler": self.crawler},
        )
        if self.held:
            self.stop()
            pool.unhold(HOLD_REASON)
        crawler = self.crawler
        if crawler is None:
            return
        if crawler.stats is not None:
            crawler.stats.set_value("cdp_pool/memory_guard/idle_mb", round(memory.memory_mb, 1))
        if crawler.engine is not None:
            asyncio.get_running_loop().create_task(
                crawler.engine.close_spider_async(reason=CLOSE_REASON),
                name="cdp-pool close spider (memory limit too low)",
            )

    def _recheck_now(self) -> None:
        self.check(self._held_pool)

    def _warn_remote(self, reading: ServerReading) -> None:
        if self._warned_remote:
            return
        self._warned_remote = True
        logger.warning(
            "CDP_POOL_SERVER_MEMORY_LIMIT_MB = %g MB is not enforced: the CDP server is "
            "remote (%s) and its memory cannot be measured from here",
            self.limit_mb,
            reading.kind or "unknown kind",
            extra={"crawler": self.crawler},
        )
