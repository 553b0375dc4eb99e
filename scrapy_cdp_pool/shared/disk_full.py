"""A full, read-only or failing disk stops the crawl cleanly, as Ctrl-C would.

Every file the plugin writes during a crawl (the JOBDIR database, the HTTP
cache, profiles saved back, ``CDP_POOL_STATUS_FILE``,
``CDP_POOL_FAILURES_FILE``) reports a write its disk refused here
(:func:`stop_for_full_disk`): for lack of space (``ENOSPC``, ``EDQUOT``,
SQLite's ``SQLITE_FULL``: :func:`is_disk_full`), or because the file system
is read-only or failing (``EROFS``, ``EIO``, SQLite's ``SQLITE_READONLY`` and
``SQLITE_IOERR``, as after a disk's I/O error that made the kernel remount it
read-only: :func:`disk_refusal`). One ERROR names the file, its filesystem
(the mount point, its type, read-only or not, space free of its size), the
cause and what was not written; stat ``cdp_pool/disk_full`` or
``cdp_pool/disk_error``; the spider is closed with ``finish_reason``
:data:`DISK_FULL_REASON` or :data:`DISK_ERROR_REASON` (requests in flight
finish, nothing more is taken) and ``scrapy crawl`` exits 1. With a JOBDIR
nothing is acknowledged after the first refused write, so the resumed crawl
(run again once space is freed or the disk repaired) loses nothing; the
requests in flight at the stop are done again.
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
DISK_ERROR_REASON = "cdp_pool_disk_error"
"""The ``finish_reason`` of a crawl stopped by a read-only or failing disk
(exit status 1)."""
FULL = "full"
"""What :func:`disk_refusal` says of a disk without space."""
UNWRITABLE = "read-only or failing"
"""What :func:`disk_refusal` says of a disk that refuses writes (read-only,
I/O errors)."""
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_UNWRITABLE_ERRNOS = {errno.EROFS, errno.EIO}
#: SQLite's primary result codes of a write its disk refused (the extended
#: codes, e.g. ``SQLITE_IOERR_WRITE``, keep them in their low byte)
_UNWRITABLE_SQLITE = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR}


def disk_refusal(error: BaseException | None) -> str | None:
    """Why the disk refused the write ``error`` (or an exception it was
    raised from) reports: :data:`FULL`, :data:`UNWRITABLE`, or ``None``
    (another error)."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
            return FULL
        if isinstance(error, OSError) and error.errno in _UNWRITABLE_ERRNOS:
            return UNWRITABLE
        if isinstance(error, sqlite3.Error):
            code = getattr(error, "sqlite_errorcode", None)
            if code == sqlite3.SQLITE_FULL or "database or disk is full" in str(error):
                return FULL
            if code is not None and code & 0xFF in _UNWRITABLE_SQLITE:
                return UNWRITABLE
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def is_disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` (or an exception it was raised from) is a write its
    disk refused: for lack of space, or read-only or failing
    (:func:`disk_refusal`); each stops the crawl the same way."""
    return disk_refusal(error) is not None


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
                    if len(fields) > 3 and fields[1] == str(mount):
                        read_only = {"ro", "emergency_ro"} & set(fields[3].split(","))
                        kind = fields[2] + (", mounted read-only" if read_only else "")
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
    """``what`` could not be written to ``path``, its disk full, read-only or
    failing (:func:`disk_refusal`): the first time, say so (one ERROR) and
    close the spider with :data:`DISK_FULL_REASON` (full) or
    :data:`DISK_ERROR_REASON`; later reports are counted only."""
    full = disk_refusal(error) in (FULL, None)
    crawler.stats.inc_value("cdp_pool/disk_full" if full else "cdp_pool/disk_error")
    state = runtime_of(crawler).part(_DISK_FULL, _DiskFull)
    if state.stopped:
        return
    state.stopped = True
    reason = DISK_FULL_REASON if full else DISK_ERROR_REASON
    fail_exit_on(crawler, [reason])
    logger.error(
        "%s: %s could not be written to %s, on filesystem %s (%s); stopping the crawl cleanly "
        "as Ctrl-C would (finish_reason %s, exit status 1): %s, then run the same command "
        "again to resume", "Disk full" if full else "Disk read-only or failing", what, path,
        filesystem_of(path), f"{type(error).__name__}: {error}", reason,
        "free space" if full else "repair the disk or move the files to a writable one",
        extra={"crawler": crawler},
    )  # fmt: skip
    engine = crawler.engine
    if engine is None or engine.spider is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    state.closing = loop.create_task(
        engine.close_spider_async(reason=reason),
        name=f"cdp-pool close spider: {reason}",
    )
