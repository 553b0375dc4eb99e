"""Draw a ``CDP_POOL_STATUS_FILE`` as one PNG, so a user sees which allocation
grows: memory (server, crawler, scraper active size) on top, the engine's
queues (active downloads, pages in flight, scheduler) below, over wall-clock
time. Needs matplotlib: ``pip install scrapy-cdp-pool[plot]``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from scrapy_cdp_pool.errors import PlotError
from scrapy_cdp_pool.shared.process_memory import MB
from scrapy_cdp_pool.telemetry.status_file import read_status_file


def plot_status(samples: list[dict[str, Any]], output: str | Path) -> Path:
    """Draw ``samples`` (as read from a status file) into the PNG ``output``.

    :raises PlotError: matplotlib is not installed, or no sample has a
        timestamp.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
        from matplotlib.figure import Figure
    except ImportError as e:
        raise PlotError("plotting needs matplotlib: pip install 'scrapy-cdp-pool[plot]'") from e
    rows = [(t, s) for s in samples if (t := _time(s)) is not None]
    if not rows:
        raise PlotError("no status sample with a timestamp to plot")
    times = [t for t, _ in rows]

    def series(key: str, scale: float = 1.0) -> list[float]:
        # Missing figures (n/a: a remote server, a closed scraper) are gaps, not zeros.
        values = []
        for _, sample in rows:
            value = sample.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values.append(float(value) * scale)
            else:
                values.append(float("nan"))
        return values

    figure = Figure(figsize=(11, 7), layout="constrained")
    FigureCanvasAgg(figure)
    memory, queues = figure.subplots(2, 1, sharex=True)
    memory.plot(times, series("server_memory_mb"), label="CDP server (MB, PSS or RSS)")
    memory.plot(times, series("crawler_rss_mb"), label="crawler process RSS (MB)")
    memory.plot(
        times, series("scraper_active_size_bytes", 1 / MB), label="scraper active size (MB)"
    )
    memory.set_ylabel("MB")
    memory.set_title("Memory")
    memory.legend(loc="upper left")
    memory.grid(alpha=0.3)
    queues.plot(times, series("active_downloads"), label="active downloads")
    queues.plot(times, series("pages_in_flight"), label="pages in flight")
    queues.plot(times, series("scheduler_requests"), label="scheduler queue (requests)")
    queues.plot(times, series("pool_waiting_leases"), label="leases waiting for a slot")
    queues.set_ylabel("requests")
    queues.set_title("Engine and pool")
    queues.legend(loc="upper left")
    queues.grid(alpha=0.3)
    queues.set_xlabel("time (UTC)")
    locator = AutoDateLocator()  # type: ignore[no-untyped-call]
    queues.xaxis.set_major_locator(locator)
    queues.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    output = Path(output)
    figure.savefig(output, format="png", dpi=100)
    return output


def plot_status_file(path: str | Path, output: str | Path) -> tuple[Path, int, int]:
    """Read the status file ``path`` and draw it into ``output``.

    :returns: the PNG path, the samples drawn, the lines skipped (cut short).
    :raises PlotError: see :func:`plot_status`.
    :raises OSError: ``path`` cannot be read.
    """
    samples, skipped = read_status_file(path)
    written = plot_status(samples, output)
    return written, len(samples), skipped


def _time(sample: dict[str, Any]) -> datetime | None:
    raw = sample.get("timestamp")
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        return None
