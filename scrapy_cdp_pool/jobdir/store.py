"""JobStore: the one SQLite database of a durable JOBDIR (``JOBDIR/cdp_pool.sqlite3``).

It holds the scheduled requests of every disk queue (one row each, named by the
queue's key under ``requests.queue/``) and the fingerprints of every request the
dupefilter let through. Rows are never deleted when a request is handed out,
only marked in flight; they are deleted (acknowledged) once the engine is done
with the request. On resume, rows still in flight are queued again.

Durability: WAL journal, one transaction per scheduler call (a push with its
fingerprint, a pop, acknowledgements), committed before the call returns. With
``synchronous=NORMAL`` (the default) a commit is a ``write()`` to the WAL: it
survives the process being killed (SIGKILL, the OOM killer), not a power loss;
``CDP_POOL_JOBDIR_FSYNC`` uses ``synchronous=FULL`` (an fsync per commit),
which survives that too. A crash at any moment leaves a prefix of the
transactions, so the queue, the fingerprints and the acknowledgements always
agree with each other.

Guarded: the store holds the JOBDIR's lock
(:class:`~scrapy_cdp_pool.jobdir.lock.JobdirLock`) while it is open, so a
second crawl on the same JOBDIR is refused by name. A database that is there
but empty, without its tables, or damaged (``PRAGMA quick_check``) is refused
(:class:`~scrapy_cdp_pool.errors.JobdirCorrupt`); only a JOBDIR with no
database at all starts afresh. The database holds request cookies and
``Authorization`` headers: it is created 0600 (built under a temporary name and
renamed, so a crash never leaves an empty one), and SQLite gives its ``-wal``
and ``-shm`` files the same mode; a database found with looser modes is made
0600 with them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.job import job_dir

from scrapy_cdp_pool.core.parts import PartKey
from scrapy_cdp_pool.errors import JobdirError, JobdirFull
from scrapy_cdp_pool.jobdir.database import (
    create_database,
    make_private,
    mark_scanned,
    open_database,
)
from scrapy_cdp_pool.jobdir.inflight import InFlight
from scrapy_cdp_pool.jobdir.lock import JobdirLock
from scrapy_cdp_pool.shared.disk_full import disk_refusal

if TYPE_CHECKING:
    from scrapy_cdp_pool.core.runtime import CrawlerRuntime

DATABASE_NAME = "cdp_pool.sqlite3"
QUEUE_DIR_NAME = "requests.queue"  # Scrapy's Scheduler: JOBDIR/requests.queue
_NEXT = "SELECT id, data FROM requests WHERE queue = ? AND in_flight = 0 ORDER BY id"
_HEAD = {True: _NEXT + " DESC LIMIT 1", False: _NEXT + " LIMIT 1"}  # LIFO: newest; FIFO: oldest


@dataclass(frozen=True)
class StoredRequest:
    """One row: ``queue`` is the disk queue's key under ``requests.queue/``,
    ``data`` the pickled ``Request.to_dict()``."""

    row_id: int
    queue: str
    in_flight: bool
    data: bytes


class JobStore:
    """Not thread-safe: Scrapy calls it from the reactor thread only."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        """Lock the JOBDIR, then open (or create) its database.

        :raises JobdirLocked: another crawl holds the JOBDIR.
        :raises JobdirCorrupt: the database is empty, not this plugin's, or
            damaged (naming the file and SQLite's error).
        :raises JobdirError: written by a newer version, or the lock file
            cannot be opened.
        """
        self.path = path
        self.queue_root = str(path.parent / QUEUE_DIR_NAME)
        self.in_flight = InFlight()
        self.commits = 0
        self._depth = 0
        self._in_transaction = False
        #: the write its disk refused (full, read-only, failing); nothing is written after it
        self.full: BaseException | None = None
        self._db: sqlite3.Connection | None = None
        self._lock: JobdirLock | None = JobdirLock(path.parent)
        try:
            self.created = not path.exists()
            if self.created:
                create_database(path)
            else:
                make_private(path)
            self._db = open_database(path, fsync=fsync, check=not self.created)
        except BaseException:
            self.close()
            raise

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise JobdirError(f"{self.path} is closed")
        return self._db

    @property
    def closed(self) -> bool:
        return self._db is None

    def queue_name(self, key: str) -> str:
        """A disk queue's row name: its key relative to ``requests.queue/``."""
        return key.removeprefix(self.queue_root).lstrip("/")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes made inside are committed together when the outermost
        ``transaction()`` ends (rolled back if it raises). A write outside any
        ``transaction()`` is committed at once."""
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if self._depth == 0 and self._in_transaction:
                self._in_transaction = False
                self.db.execute("ROLLBACK")
            raise
        self._depth -= 1
        if self._depth == 0:
            self._commit()

    def _write(self, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        """:raises JobdirFull: the disk is full (now or earlier in this run)."""
        if self.full is not None:
            raise JobdirFull(f"{self.path}: not written, its disk refused a write ({self.full})")
        try:
            if not self._in_transaction:
                self.db.execute("BEGIN IMMEDIATE")
                self._in_transaction = True
            cursor = self.db.execute(sql, params)
        except sqlite3.Error as e:
            self._refused(e)
            raise
        if self._depth == 0:
            self._commit()
        return cursor

    def _commit(self) -> None:
        if self._in_transaction:
            self._in_transaction = False
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error as e:
                self._in_transaction = True
                self._refused(e)
                raise
            self.commits += 1

    def _refused(self, error: sqlite3.Error) -> None:
        """A write failed: the transaction is rolled back; a disk full,
        read-only or failing stops every later write. :raises JobdirFull:
        the disk refused it (:func:`disk_refusal`)."""
        if self._in_transaction:
            self._in_transaction = False
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite rolled back itself
        refusal = disk_refusal(error)
        if refusal is not None:
            self.full = error
            raise JobdirFull(f"{self.path}: not written, its disk {refusal} ({error})") from error

    def push(self, queue: str, data: bytes) -> int:
        cursor = self._write("INSERT INTO requests (queue, data) VALUES (?, ?)", (queue, data))
        return cursor.lastrowid or 0  # always set after an INSERT

    def _head(self, queue: str, lifo: bool) -> tuple[int, bytes] | None:
        row: tuple[int, bytes] | None = self.db.execute(_HEAD[lifo], (queue,)).fetchone()
        return row

    def pop(self, queue: str, *, lifo: bool) -> tuple[int, bytes] | None:
        """The queue's next row, marked in flight (kept until :meth:`ack`)."""
        row = self._head(queue, lifo)
        if row is not None:
            self._write("UPDATE requests SET in_flight = 1 WHERE id = ?", (row[0],))
        return row

    def peek(self, queue: str, *, lifo: bool) -> bytes | None:
        row = self._head(queue, lifo)
        return row[1] if row is not None else None

    def pending(self, queue: str) -> int:
        """Rows of ``queue`` not in flight."""
        count: int = self.db.execute(
            "SELECT COUNT(*) FROM requests WHERE queue = ? AND in_flight = 0", (queue,)
        ).fetchone()[0]
        return count

    def ack(self, row_ids: Iterable[int]) -> None:
        """The engine is done with these requests: forget them."""
        with self.transaction():
            for row_id in row_ids:
                self._write("DELETE FROM requests WHERE id = ?", (row_id,))

    def add_fingerprint(self, fingerprint: bytes) -> bool:
        """Record a fingerprint; ``False`` when it was there already (then
        nothing is written)."""
        if self.db.execute("SELECT 1 FROM seen WHERE fingerprint = ?", (fingerprint,)).fetchone():
            return False
        self._write("INSERT INTO seen (fingerprint) VALUES (?)", (fingerprint,))
        return True

    def fingerprints(self) -> int:
        count: int = self.db.execute("SELECT COUNT(*) FROM seen").fetchone()[0]
        return count

    def requeue_in_flight(self) -> int:
        """Queue again the rows that were in flight when the crawl stopped."""
        return self._write("UPDATE requests SET in_flight = 0 WHERE in_flight = 1").rowcount

    def queues(self) -> list[str]:
        """Names of the queues that have rows not in flight."""
        rows = self.db.execute("SELECT DISTINCT queue FROM requests WHERE in_flight = 0")
        return sorted(name for (name,) in rows)

    def rename(self, row_id: int, queue: str) -> None:
        self._write("UPDATE requests SET queue = ? WHERE id = ?", (queue, row_id))

    def rows(self, queue: str | None = None) -> Iterator[StoredRequest]:
        """Every row (of ``queue``), oldest first."""
        if queue is None:
            cursor = self.db.execute("SELECT id, queue, in_flight, data FROM requests ORDER BY id")
        else:
            cursor = self.db.execute(
                "SELECT id, queue, in_flight, data FROM requests WHERE queue = ? ORDER BY id",
                (queue,),
            )
        for row_id, name, in_flight, data in cursor.fetchall():
            yield StoredRequest(row_id, name, bool(in_flight), data)

    def close(self) -> None:
        """Commit, close the database and release the JOBDIR's lock. Idempotent."""
        try:
            if self._db is not None:
                db = self._db
                if self.full is None:
                    self._commit()
                self._db = None
                db.close()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def check_jobdir(directory: str | Path) -> None:
    """What the store would refuse, checked before the crawl starts (by the
    add-on): the JOBDIR locked by another crawl, a database that is empty,
    not this plugin's or damaged. The lock is released again; the scheduler
    takes it for the crawl's life when it opens the store.

    :raises JobdirLocked, JobdirCorrupt, JobdirError: as :class:`JobStore`.
    """
    path = Path(directory, DATABASE_NAME)
    lock = JobdirLock(path.parent)
    try:
        if path.exists():
            make_private(path)
            open_database(path, fsync=False, check=True).close()  # checkpoints the WAL
            mark_scanned(path)
    finally:
        lock.release()


def open_jobdir(directory: str | Path) -> JobStore:
    """The store of a JOBDIR, to look at what it holds (``rows()``) between runs.

    :raises JobdirError: the directory has no durable JOBDIR database.
    """
    path = Path(directory, DATABASE_NAME)
    if not path.exists():
        raise JobdirError(f"{directory} has no {DATABASE_NAME}: not a durable JOBDIR")
    return JobStore(path)


class _OpenStore:
    """A crawler's store in its JOBDIR, kept on its runtime (:func:`job_store`)."""

    store: JobStore | None = None


_OPEN_STORE: PartKey[_OpenStore] = PartKey("JOBDIR store")


def job_store(runtime: CrawlerRuntime) -> JobStore:
    """The crawler's store in its ``JOBDIR``, opened on first use (by the
    dupefilter or a disk queue) and closed by the scheduler (a later use
    opens it again).

    :raises JobdirError: ``JOBDIR`` is not set.
    """
    held = runtime.part(_OPEN_STORE, _OpenStore)
    store = held.store
    if store is None or store.closed:
        directory = job_dir(runtime.crawler.settings)
        if not directory:
            raise JobdirError("the durable JOBDIR components need the JOBDIR setting")
        store = held.store = JobStore(
            Path(directory, DATABASE_NAME), fsync=runtime.config.jobdir.fsync
        )
    return store
