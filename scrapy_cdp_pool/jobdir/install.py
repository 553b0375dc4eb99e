"""Which settings the add-on sets for the durable JOBDIR.

Scrapy's defaults are replaced: ``SCHEDULER``, ``DUPEFILTER_CLASS``, and the disk
queues, each of Scrapy's own disk queues (set by the project or not) becoming
the SQLite queue of the same order, so a breadth-first crawl stays breadth-first.
A scheduler or dupefilter the project chose itself is kept: with another
scheduler nothing is installed (logged), and a disk queue class that is not
Scrapy's is refused by name when the crawl starts.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path
from typing import Any

from scrapy import squeues
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from scrapy_cdp_pool.errors import JobdirError
from scrapy_cdp_pool.jobdir.store import DATABASE_NAME

logger = logging.getLogger(__name__)

SCHEDULER = "scrapy_cdp_pool.jobdir.DurableScheduler"
DUPEFILTER = "scrapy_cdp_pool.jobdir.DurableDupeFilter"
LIFO_QUEUE = "scrapy_cdp_pool.jobdir.SqliteLifoQueue"
FIFO_QUEUE = "scrapy_cdp_pool.jobdir.SqliteFifoQueue"
SCRAPY_SCHEDULER = "scrapy.core.scheduler.Scheduler"
SCRAPY_DUPEFILTER = "scrapy.dupefilters.RFPDupeFilter"

Setting = tuple[str, str, int]
_DISK = ("Pickle", "Marshal")  # scrapy.squeues' disk queues (files or SQLite)


def durable_settings(settings: BaseSettings) -> list[Setting]:
    """``(name, value, priority)`` to set, empty when the project has its own
    ``SCHEDULER``."""
    addon = SETTINGS_PRIORITIES["addon"]
    scheduler = _path(settings.get("SCHEDULER"))
    if scheduler not in (SCRAPY_SCHEDULER, SCHEDULER):
        logger.warning(
            "JOBDIR is set but SCHEDULER is %s: the durable JOBDIR of scrapy_cdp_pool is "
            "not installed, and a crawl killed with SIGKILL may lose or repeat requests",
            scheduler,
        )
        return []
    changes: list[Setting] = [("SCHEDULER", SCHEDULER, addon)]
    if _path(settings.get("DUPEFILTER_CLASS")) == SCRAPY_DUPEFILTER:
        changes.append(("DUPEFILTER_CLASS", DUPEFILTER, addon))
    for name in ("SCHEDULER_DISK_QUEUE", "SCHEDULER_START_DISK_QUEUE"):
        scrapy_queue = _scrapy_queue_name(settings.get(name))
        if scrapy_queue is not None:
            queue = FIFO_QUEUE if "Fifo" in scrapy_queue else LIFO_QUEUE
            changes.append((name, queue, max(settings.getpriority(name) or 0, addon)))
    return changes


def refuse_durable_queue(jobdir: str) -> None:
    """With ``CDP_POOL_JOBDIR_DURABLE = False``: refuse a ``jobdir`` whose
    durable database still holds requests, which Scrapy's own scheduler would
    ignore silently (the mirror of the durable scheduler refusing Scrapy's
    ``active.json``).

    :raises JobdirError: naming the JOBDIR, the database and the count.
    """
    path = Path(jobdir) / DATABASE_NAME
    if not path.is_file():
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            count = int(db.execute("SELECT COUNT(*) FROM requests").fetchone()[0])
    except sqlite3.Error as e:
        raise JobdirError(f"{path}: cannot be read ({e}); start a new JOBDIR") from e
    if count:
        raise JobdirError(
            f"{jobdir} holds {count} requests queued by the durable JOBDIR of scrapy_cdp_pool "
            f"({path}); resume it with CDP_POOL_JOBDIR_DURABLE = True, or start a new JOBDIR"
        )


def _path(value: Any) -> str:
    if isinstance(value, str):
        return value
    return f"{value.__module__}.{value.__qualname__}"


def _scrapy_queue_name(value: Any) -> str | None:
    """``"PickleFifoDiskQueue"`` for one of ``scrapy.squeues``' disk queues;
    ``None`` for anything else (``None``, a memory queue, another package's)."""
    if isinstance(value, str):
        module, _, name = value.rpartition(".")
        return name if module == "scrapy.squeues" and name.startswith(_DISK) else None
    for name in dir(squeues):
        if name.startswith(_DISK) and getattr(squeues, name) is value:
            return name
    return None
