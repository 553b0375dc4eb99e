"""LoadMonitor: measures the load for a
:class:`~scrapy_cdp_pool.ConcurrencyBudget` and ticks it.

:data:`SAMPLES_PER_TICK` times per ``interval_s`` it takes a
:class:`~scrapy_cdp_pool.budget.load.LoadSample`: the memory of the embedded
servers of the attached crawlers' pools (their whole process trees, through
:func:`~scrapy_cdp_pool.shared.process_memory.trees_memory`), the
machine's CPU busy share since the previous sample (psutil), how late the event
loop woke the monitor up, and the budget's peak of pages in flight. Each
``interval_s`` the window of samples goes to :meth:`ConcurrencyBudget.tick`.

One asyncio task per budget, started when a crawler's engine starts and
stopped when the last crawler detaches.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import psutil

from scrapy_cdp_pool.budget.load import LoadSample
from scrapy_cdp_pool.shared.process_memory import MB, trees_memory

if TYPE_CHECKING:
    from scrapy_cdp_pool.budget.budget import ConcurrencyBudget

logger = logging.getLogger(__name__)

#: Samples per autoscaling interval (the window a tick looks at).
SAMPLES_PER_TICK = 5


class CpuMeter:
    """The machine's CPU busy share between two calls (all cores), from
    psutil's CPU times, without sharing ``psutil.cpu_percent``'s global state."""

    def __init__(self) -> None:
        self._last = _busy_total()

    def ratio(self) -> float | None:
        """Busy share (0 to 1) since the previous call; ``None`` when no time passed."""
        busy, total = _busy_total()
        last_busy, last_total = self._last
        self._last = (busy, total)
        elapsed = total - last_total
        if elapsed <= 0:
            return None
        return min(1.0, max(0.0, (busy - last_busy) / elapsed))


def _busy_total() -> tuple[float, float]:
    times = psutil.cpu_times()
    # On Linux guest times are already counted in user/nice.
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    idle = times.idle + getattr(times, "iowait", 0.0)
    return total - idle, total


def system_memory_mb() -> float:
    """The machine's total memory, mebibytes."""
    return float(psutil.virtual_memory().total) / MB


class LoadMonitor:
    """Samples the load and ticks ``budget`` (see the module documentation)."""

    def __init__(self, budget: ConcurrencyBudget) -> None:
        self.budget = budget
        self.samples = 0
        self._task: asyncio.Task[None] | None = None
        self._stopping: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start sampling on the running event loop. Idempotent."""
        if self.running:
            return
        task = asyncio.get_running_loop().create_task(
            self._run(), name=f"cdp-pool budget {self.budget.name} monitor"
        )
        task.add_done_callback(self._on_done)
        self._task = task

    def stop(self) -> None:
        """Stop sampling (the window in progress is dropped). Idempotent."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            self._stopping.add(task)
            task.cancel()

    def _on_done(self, task: asyncio.Task[None]) -> None:
        self._stopping.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "Concurrency budget %r: its load monitor stopped; desired stays %d pages",
                self.budget.name,
                self.budget.desired,
                exc_info=task.exception(),
            )

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        budget = self.budget
        period_s = budget.interval_s / SAMPLES_PER_TICK
        cpu = CpuMeter()
        window: list[LoadSample] = []
        while True:
            due = loop.time() + period_s
            await asyncio.sleep(period_s)
            lag_s = max(0.0, loop.time() - due)
            window.append(
                LoadSample(
                    server_memory_mb=self.server_memory_mb(),
                    cpu_ratio=cpu.ratio(),
                    loop_lag_s=lag_s,
                    pages_in_flight=budget.take_peak(),
                )
            )
            self.samples += 1
            if len(window) >= SAMPLES_PER_TICK:
                budget.tick(window, system_memory_mb=system_memory_mb())
                window = []

    def server_memory_mb(self) -> float | None:
        """The attached pools' embedded servers together (PSS where known),
        mebibytes; ``None`` when none is running (remote endpoints only, or
        no pool started)."""
        total: float | None = None
        for pool in self.budget.pools():
            pids = pool.server_pids()
            memory = trees_memory(pids) if pids else None
            if memory is not None:
                total = (total or 0.0) + memory.memory_mb
        return total
