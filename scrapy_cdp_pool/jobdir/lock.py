"""JobdirLock: one crawl at a time per JOBDIR.

Two crawls on one JOBDIR would share its queue: the second would "resume"
and take the first one's requests in flight, and fetch them again. The durable
JOBDIR therefore holds an exclusive ``flock`` on ``JOBDIR/cdp_pool.lock`` from
the moment its database is opened until it is closed, and writes its PID in
that file. ``flock`` is released by the kernel when the process holding it
dies, even by SIGKILL: a lock file left by a dead crawl does not block the
resume (the file stays; only a held lock refuses).

The lock is taken on a file of its own, not on the database: SQLite uses POSIX
``fcntl`` locks on the database, which a second ``open``/``close`` of the same
file in this process would drop.

On Windows, where ``fcntl`` does not exist, the lock is ``msvcrt.locking`` on one
byte past the PID, which Windows also releases when the handle is closed or its
process ends. Each module is imported when a lock is taken, so the package
imports on every platform.
"""

from __future__ import annotations

import errno
import os
import sys
import weakref
from pathlib import Path

from scrapy_cdp_pool.errors import LOCK_NAME, JobdirError, JobdirLocked


class JobdirLock:
    """An exclusive ``flock`` on ``directory/cdp_pool.lock`` (created 0600),
    taken at once or refused.

    :raises JobdirLocked: another open file description holds it (another
        crawl, or another crawler of this process on the same JOBDIR).
    :raises JobdirError: the lock file cannot be opened (naming it and the OS
        error).
    """

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_NAME
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOINHERIT, 0o600)
        except OSError as e:
            raise JobdirError(f"{self.path}: cannot be opened ({e.strerror})") from e
        try:
            _lock_exclusive(fd)
        except OSError as e:
            pid = _read_pid(fd)
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise JobdirLocked(directory, pid) from None
            raise JobdirError(f"{self.path}: cannot be locked ({e.strerror})") from e
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        # Closing the only descriptor releases the flock: on release(), or
        # when the lock is garbage-collected unreleased.
        self._close = weakref.finalize(self, os.close, fd)

    @property
    def held(self) -> bool:
        return self._close.alive

    def release(self) -> None:
        """Unlock and close. Idempotent. The file stays: removing it would let
        a crawl lock a new file while another still holds the old one."""
        self._close()


#: not inherited by child processes (``O_NOINHERIT`` is Windows' name)
_NOINHERIT = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOINHERIT", 0)

#: the byte ``msvcrt.locking`` locks: past the PID, which others may then read
_LOCKED_BYTE = 64


def _lock_exclusive(fd: int) -> None:
    """Lock ``fd``'s file exclusively, or raise OSError at once (with errno
    ``EWOULDBLOCK`` when another holder has it)."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _LOCKED_BYTE, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EDEADLK):  # locked elsewhere
                raise BlockingIOError(errno.EWOULDBLOCK, e.strerror) from e
            raise
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
