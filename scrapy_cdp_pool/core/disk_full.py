"""A full disk stops the crawl cleanly, as Ctrl-C would.

Every file the plugin writes during a crawl (the JOBDIR database, the HTTP
cache, profiles saved back, ``CDP_POOL_STATUS_FILE``,
``CDP_POOL_FAILURES_FILE``) reports a write refused for lack of space
(``ENOSPC``, ``EDQUOT``, SQLite's ``SQLITE_FULL``: :func:`is_disk_full`) here
(:func:`stop_for_full_disk`): one ERROR naming the file, its filesystem (the
mount point, its type, space free of its size) and what was not written; stat
``cdp_pool/disk_full``; the spider is closed with ``finish_reason``
:data:`DISK_FULL_REASON` (requests in flight finish, nothing more is taken)
and ``scrapy crawl`` exits 1. With a JOBDIR nothing is acknowledged after the
first refused write, so the resumed crawl (run again once space is freed)
loses nothing; the requests in flight at the stop are done again.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy_cdp_pool.core.exit_status import fail_exit_on
from scrapy_cdp_pool.core.parts import PartKey
from scrapy_cdp_pool.core.runtime import runtime_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

DISK_FULL_REASON = "cdp_pool_disk_full"
"""The ``finish_reason`` of a crawl stopped by a full disk (exit status 1)."""
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}


def is_disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` (or an exception it was raised from) is a write
    refused for lack of space."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
            return True
        if isinstance(error, sqlite3.Error) and (
            getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or "database or disk is full" in str(error)
        ):
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False


def filesystem_of(path: str | Path) -> str:
    """``<mount point> (<type>, <free> free of <size>)``, as far as it can be read."""
    try:
        at = Path(os.path.abspath(path))
        while not at.exists() and at != at.parent:
            at = at.parent
        mount = at
        while not os.path.ismount(mount) and mount != mount.parent:
            mount = mount.parent
        kind = ""
        try:
            with open("/proc/self/mounts", encoding="utf-8") as mounts:
                for line in mounts:
                    fields = line.split()
                    if len(fields) > 2 and fields[1] == str(mount):
                        kind = fields[2]
        except OSError:
            pass
        stat = os.statvfs(at)
        free, size = stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize
        return f"{mount} ({kind + ', ' if kind else ''}{_size(free)} free of {_size(size)})"
    except OSError as e:
        return f"(its filesystem cannot be read: {e})"


def _size(count: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return str(count)


class _DiskFull:
    stopped = False
    closing: asyncio.Task[None] | None = None


_DISK_FULL: PartKey[_DiskFull] = PartKey("disk full")


def stop_for_full_disk(crawler: Crawler, path: str | Path, what: str, error: BaseException) -> None:
    """``what`` could not be written to ``path`` for lack of space: the first
    time, say so (one ERROR) and close the spider with
    :data:`DISK_FULL_REASON`; later reports are counted only."""
    crawler.stats.inc_value("cdp_pool/disk_full")
    state = runtime_of(crawler).part(_DISK_FULL, _DiskFull)
    if state.stopped:
        return
    state.stopped = True
    fail_exit_on(crawler, [DISK_FULL_REASON])
    logger.error(
        "Disk full: %s could not be written to %s, on filesystem %s (%s); stopping the crawl "
        "cleanly as Ctrl-C would (finish_reason %s, exit status 1): free space, then run the "
        "same command again to resume", what, path, filesystem_of(path),
        f"{type(error).__name__}: {error}", DISK_FULL_REASON, extra={"crawler": crawler},
    )  # fmt: skip
    engine = crawler.engine
    if engine is None or engine.spider is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    state.closing = loop.create_task(
        engine.close_spider_async(reason=DISK_FULL_REASON),
        name="cdp-pool close spider: disk full",
    )
