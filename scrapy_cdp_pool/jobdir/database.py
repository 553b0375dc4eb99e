"""The durable JOBDIR's SQLite database file: its schema, how it is created
(0600, built under a temporary name and renamed, so ``cdp_pool.sqlite3`` is
either absent or complete), and the checks made before it is resumed (not
empty, this plugin's tables and schema version, ``PRAGMA quick_check``).
:class:`~scrapy_cdp_pool.jobdir.store.JobStore` reads and writes it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from scrapy_cdp_pool.errors import JobdirCorrupt, JobdirError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY,
    queue TEXT NOT NULL,
    in_flight INTEGER NOT NULL DEFAULT 0,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_by_queue ON requests (queue, in_flight, id);
CREATE TABLE IF NOT EXISTS seen (fingerprint BLOB PRIMARY KEY) WITHOUT ROWID;
"""
_TABLES = ("requests", "seen")


def create_database(path: Path) -> None:
    """A new, empty database at ``path``, mode 0600: built under a temporary
    name and renamed, so that ``path`` is either absent or complete."""
    building = path.with_name(path.name + ".new")
    for leftover in (building, *_companions(building)):  # a crash while building
        leftover.unlink(missing_ok=True)
    try:
        os.close(os.open(building, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        with contextlib.closing(sqlite3.connect(building, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=WAL")  # kept in the file
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        os.replace(building, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename survives a power loss too
        finally:
            os.close(directory)
    except (OSError, sqlite3.Error) as e:
        raise JobdirError(f"{path}: cannot be created ({e})") from e


# Databases check_jobdir() found sound, by path: their (inode, size, mtime)
# then. The store opening one unchanged skips the page scan (quick_check reads
# every page: ~1.3 s for 100 MB here), not the other checks.
_scanned: dict[Path, tuple[int, int, int]] = {}


def mark_scanned(path: Path) -> None:
    """``path`` was just found sound: the next :func:`open_database` of it,
    unchanged, skips the page scan."""
    _scanned[path.absolute()] = _identity(path)


def _identity(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_ino, info.st_size, info.st_mtime_ns


def open_database(path: Path, *, fsync: bool, check: bool) -> sqlite3.Connection:
    """Connect to the database; with ``check``, make sure it is one this
    plugin wrote and is not damaged.

    :raises JobdirCorrupt: naming the file and SQLite's error.
    """
    if check and path.stat().st_size == 0:
        raise JobdirCorrupt(path, "is empty (0 bytes), not a durable JOBDIR database")
    scan = _scanned.pop(path.absolute(), None) != _identity(path)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        if check:
            _check(db, path, scan=scan)
    except sqlite3.DatabaseError as e:
        db.close()
        raise JobdirCorrupt(path, f"cannot be read (SQLite: {e})") from e
    except BaseException:
        db.close()
        raise
    return db


def _check(db: sqlite3.Connection, path: Path, *, scan: bool = True) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise JobdirError(
            f"{path}: written by a newer scrapy-cdp-pool (schema {version}, "
            f"this one reads {SCHEMA_VERSION}); resume it with that version"
        )
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [name for name in _TABLES if name not in tables]
    if version != SCHEMA_VERSION or missing:
        raise JobdirCorrupt(
            path,
            f"is not a durable JOBDIR database (schema version {version}, "
            f"tables missing: {', '.join(missing) or 'none'})",
        )
    if not scan:
        return
    problems = [row[0] for row in db.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise JobdirCorrupt(path, f"is damaged (SQLite quick_check: {'; '.join(problems)})")


def _companions(path: Path) -> tuple[Path, Path]:
    """SQLite's WAL and shared-memory files of the database ``path``."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def make_private(path: Path) -> None:
    """Mode 0600 for the database ``path`` and its ``-wal`` and ``-shm`` files
    that exist (a JOBDIR written by an older version, 0644)."""
    for file in (path, *_companions(path)):
        with contextlib.suppress(FileNotFoundError):
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)
