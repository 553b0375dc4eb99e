"""The private directory of each server the plugin starts: its CDP socket,
its ``TMPDIR``, Chromium's profile and crash directories.

Made with :func:`tempfile.mkdtemp` (mode 0700, in the system's temporary
directory, or in a shorter one when ``TMPDIR`` is too long for the sockets the
browsers make inside it: :func:`private_base`) as ``cdp-pool-*``, with a
marker file naming the process that made it (PID and start, as
:mod:`.process_start`'s mark: exact on Linux, not moved by clock changes). Removed
when the server stops; what a killed crawl left behind is removed by the next
start (:func:`remove_stale_dirs`): only
directories with the marker, owned by this user, whose maker is no longer
running. The server the directory served is recorded in it too
(:func:`record_server`: PID, start time, command line): a server its crawl
did not take down with it (SIGKILLed while the browser started, before the
browser asked to die with its parent) is ended by that sweep, by its process
group, only when its start time and command line are the recorded ones and
it runs as this user (before: an orphan Lightpanda ran 48 minutes).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import tempfile
from pathlib import Path

import psutil

from scrapy_cdp_pool.browser.pool.process_start import same_start, start_mark

logger = logging.getLogger(__name__)

PREFIX = "cdp-pool-"
MARKER = ".cdp-pool-owner"
#: the server started with the directory: ``{"pid", "start_time", "start_mark",
#: "cmdline"}`` (the start as a wall-clock time and as :mod:`.process_start`'s mark)
SERVER_RECORD = ".cdp-pool-server"

_swept = False

#: the longest base directory whose private directories keep the browsers'
#: Unix socket paths under the 107 bytes a sockaddr_un holds: Chromium's
#: singleton socket is ``<base>/cdp-pool-chromium-XXXXXXXX/tmp/
#: .org.chromium.Chromium.XXXXXX/SingletonSocket``, 77 bytes past the base
#: (measured: Chromium did not start with a 29-character TMPDIR)
MAX_BASE_LENGTH = 24
#: shorter places for them, tried in order when TMPDIR is longer
#: (mkdtemp makes a 0700 directory there, as it does in TMPDIR)
_SHORT_BASES = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108


def private_base() -> str:
    """Where private directories are made: the system's temporary directory
    (``TMPDIR``), or the first of /tmp, /var/tmp, /dev/shm that this user
    can write when ``TMPDIR`` is longer than :data:`MAX_BASE_LENGTH`.

    :raises OSError: ``TMPDIR`` is too long and none of those can be used
        (the message says to set a shorter ``TMPDIR``).
    """
    base = tempfile.gettempdir()
    if len(base.encode()) <= MAX_BASE_LENGTH:
        return base
    for candidate in _SHORT_BASES:
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    raise OSError(
        f"TMPDIR {base!r} is {len(base.encode())} bytes long: the browsers' Unix sockets "
        f"inside it would pass the 107 bytes a socket path holds, and none of "
        f"{', '.join(_SHORT_BASES)} can be used instead: set TMPDIR to a directory of at "
        f"most {MAX_BASE_LENGTH} bytes"
    )


def _start_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


def _started_as_recorded(record: dict[str, object], pid: int) -> bool:
    """Whether process ``pid`` is the one a record names: its start mark
    (:mod:`.process_start`) equals the recorded one; a record without a mark
    (written by an earlier version, or a mark that could not be read) is
    compared by wall-clock start time."""
    if record.get("start_mark") is not None:
        return same_start(record["start_mark"], start_mark(pid))
    return same_start(record.get("start_time"), _start_time(pid))


def make_private_dir(kind: str) -> Path:
    """A new ``cdp-pool-<kind>-*`` directory, mode 0700, with the marker."""
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=private_base()))
    pid = os.getpid()
    owner = {"pid": pid, "start_time": _start_time(pid), "start_mark": start_mark(pid)}
    marker = path / MARKER
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(owner, f)
    return path


def record_server(path: Path, pid: int) -> None:
    """Note in ``path`` (a private directory) the server process ``pid``
    started for it, for :func:`remove_stale_dirs` to end it if its crawl dies
    without doing so. Never raises (a server not recorded is not swept)."""
    try:
        process = psutil.Process(pid)
        record = {
            "pid": pid,
            "start_time": process.create_time(),
            "start_mark": start_mark(pid),
            "cmdline": process.cmdline(),
        }
        fd = os.open(path / SERVER_RECORD, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f)
    except (psutil.Error, OSError) as e:
        logger.debug("The server %s of %s was not recorded: %r", pid, path, e)


def _end_orphan(path: Path) -> int | None:
    """End the server recorded in ``path`` (:func:`record_server`) if it
    still runs: the same process (:func:`_started_as_recorded`, same command line),
    this user's. Its process group (the server's own session: its children
    too) gets SIGKILL. The PID ended, or ``None``."""
    try:
        record = json.loads((path / SERVER_RECORD).read_text(encoding="utf-8"))
        pid, cmdline = int(record["pid"]), record["cmdline"]
        process = psutil.Process(pid)
        same = (
            _started_as_recorded(record, pid)
            and process.cmdline() == cmdline
            and process.uids().real == os.getuid()
        )
        if not same:
            return None
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            process.kill()
        psutil.wait_procs([process], timeout=5)
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        return None  # no record, gone already, or not ours to judge
    return pid


def _maker_alive(marker: Path) -> bool:
    try:
        owner = json.loads(marker.read_text(encoding="utf-8"))
        pid = int(owner["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return True  # unreadable: not ours to judge, leave it
    if not psutil.pid_exists(pid):
        return False
    if owner.get("start_time") is None and owner.get("start_mark") is None:
        return True  # no start recorded: cannot tell a reused PID
    return _started_as_recorded(owner, pid)  # else: the PID was reused


def remove_stale_dirs(root: str | None = None) -> list[Path]:
    """Remove the private directories of servers whose crawl died without
    stopping them (SIGKILL, power loss): only ``cdp-pool-*`` directories in
    ``root`` (default: the system's temporary directory) that are owned by
    this user, hold the marker, and whose maker process is gone. Returns
    what it removed. Never raises."""
    base = Path(root or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    uid = os.getuid()
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            if not entry.is_dir() or entry.is_symlink() or entry.stat().st_uid != uid:
                continue
        except OSError:
            continue
        marker = entry / MARKER
        if not marker.is_file() or _maker_alive(marker):
            continue
        orphan = _end_orphan(entry)
        if orphan is not None:
            logger.warning(
                "Ended a browser server (pid %s) left running by a crawl that was killed: %s",
                orphan, entry,
            )  # fmt: skip
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    if removed:
        logger.info(
            "Removed %d directory(ies) left by crawls that were killed: %s",
            len(removed),
            ", ".join(str(p) for p in removed),
        )
    return removed


def sweep_once() -> None:
    """:func:`remove_stale_dirs`, once per process (at the first server start)."""
    global _swept
    if not _swept:
        _swept = True
        remove_stale_dirs()
        try:
            base = private_base()
        except OSError:
            return
        if base != tempfile.gettempdir():
            remove_stale_dirs(base)
