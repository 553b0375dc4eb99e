"""A guarded JOBDIR (issue 12, items 5 to 7), without a crawl: one crawl at
a time (a lock the kernel releases when its holder dies, SIGKILL included),
a damaged, empty or foreign database refused by name instead of resumed or
restarted, and the files that hold cookies and credentials private (0600)."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.errors import JobdirCorrupt, JobdirError, JobdirLocked
from scrapy_cdp_pool.jobdir import JobStore
from scrapy_cdp_pool.jobdir.lock import LOCK_NAME
from scrapy_cdp_pool.jobdir.store import DATABASE_NAME, check_jobdir

HOLDER = """
import sys
from pathlib import Path
from scrapy_cdp_pool.jobdir import JobStore
store = JobStore(Path(sys.argv[1]))
store.push("0", b"a request")
print("HOLDING", flush=True)
sys.stdin.read()  # until the test kills this process
"""


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The usual umask (022), whatever this process had, restored after."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_second_store_on_a_locked_jobdir_is_refused_naming_it_and_the_pid(
    tmp_path: Path,
) -> None:
    first = JobStore(tmp_path / DATABASE_NAME)
    first.push("0", b"one")
    with pytest.raises(JobdirLocked) as refused:
        JobStore(tmp_path / DATABASE_NAME)
    assert refused.value.pid == os.getpid()
    assert str(tmp_path) in str(refused.value)
    assert f"process {os.getpid()}" in str(refused.value)
    with pytest.raises(JobdirLocked):
        check_jobdir(tmp_path)  # what the add-on runs at start
    first.push("0", b"two")  # the first is unaffected
    assert [row.data for row in first.rows()] == [b"one", b"two"]
    first.close()
    second = JobStore(tmp_path / DATABASE_NAME)  # released on close
    assert len(list(second.rows())) == 2
    second.close()


def test_a_lock_left_by_a_sigkilled_process_does_not_block_the_resume(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / DATABASE_NAME)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "HOLDING"
        with pytest.raises(JobdirLocked, match=rf"in use by process {holder.pid} "):
            JobStore(tmp_path / DATABASE_NAME)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=60)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
    assert holder.returncode == -signal.SIGKILL
    assert (tmp_path / LOCK_NAME).read_text().strip() == str(holder.pid)  # the file stays
    check_jobdir(tmp_path)
    store = JobStore(tmp_path / DATABASE_NAME)
    assert not store.created
    assert [row.data for row in store.rows()] == [b"a request"]  # committed before the kill
    store.close()
    assert (tmp_path / LOCK_NAME).read_text().strip() == str(os.getpid())


def damage_header(path: Path) -> str:
    with path.open("r+b") as file:
        file.write(b"this is not SQLite")
    return "file is not a database"


def damage_pages(path: Path) -> str:
    """Garbage over every page but the first: the header reads, the tables do not."""
    with path.open("r+b") as file:
        file.seek(4096)
        file.write(os.urandom(path.stat().st_size - 4096))
    return "SQLite"


def empty(path: Path) -> str:
    path.write_bytes(b"")
    return "is empty (0 bytes)"


def drop_table(path: Path) -> str:
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE seen")
    db.close()
    return "tables missing: seen"


@pytest.mark.parametrize("damage", [damage_header, damage_pages, empty, drop_table])
def test_a_damaged_empty_or_foreign_database_is_refused_naming_the_file(
    damage: object, tmp_path: Path
) -> None:
    store = JobStore(tmp_path / DATABASE_NAME)
    for n in range(300):  # a few pages of rows
        store.push("0", b"request %d " % n * 20)
        store.add_fingerprint(b"fp %d" % n)
    store.close()
    path = tmp_path / DATABASE_NAME
    assert callable(damage)
    expected = damage(path)
    for attempt in (lambda: check_jobdir(tmp_path), lambda: JobStore(path)):
        with pytest.raises(JobdirCorrupt) as refused:
            attempt()
        assert str(path) in str(refused.value)
        assert expected in str(refused.value)
        assert refused.value.path == path
    assert path.exists()  # left as it was, for the user to look at
    assert not path.stat().st_size or damage is not empty
    JobStore(tmp_path / "other.sqlite3").close()  # the lock was released


def test_only_a_jobdir_without_a_database_starts_afresh(tmp_path: Path) -> None:
    store = JobStore(tmp_path / DATABASE_NAME)
    assert store.created
    store.close()
    assert not (tmp_path / f"{DATABASE_NAME}.new").exists()
    store = JobStore(tmp_path / DATABASE_NAME)
    assert not store.created
    store.close()


def test_a_newer_schema_is_still_refused_as_such(tmp_path: Path) -> None:
    store = JobStore(tmp_path / DATABASE_NAME)
    store.db.execute("PRAGMA user_version=99")
    store.close()
    with pytest.raises(JobdirError, match=r"written by a newer scrapy-cdp-pool \(schema 99"):
        check_jobdir(tmp_path)


@pytest.mark.usefixtures("usual_umask")
def test_the_database_its_wal_and_shm_and_the_lock_are_0600(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_NAME
    store = JobStore(path)
    store.push("0", b"Cookie: session=secret")
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    assert wal.exists()
    assert shm.exists()
    assert {p.name: mode(p) for p in (path, wal, shm, tmp_path / LOCK_NAME)} == {
        DATABASE_NAME: 0o600, wal.name: 0o600, shm.name: 0o600, LOCK_NAME: 0o600,
    }  # fmt: skip
    store.close()


def test_a_database_written_0644_by_an_older_version_is_made_0600(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_NAME
    JobStore(path).close()
    path.chmod(0o644)
    store = JobStore(path)
    store.push("0", b"x")
    assert mode(path) == 0o600
    assert mode(Path(f"{path}-wal")) == 0o600
    store.close()


def addon_settings(values: dict[str, object]) -> Settings:
    settings = Settings(values, priority="project")
    Addon().update_settings(settings)
    return settings


def test_the_add_on_refuses_a_locked_or_damaged_jobdir_at_start(tmp_path: Path) -> None:
    store = JobStore(tmp_path / DATABASE_NAME)
    with pytest.raises(JobdirLocked, match="is in use by process"):
        addon_settings({"JOBDIR": str(tmp_path)})
    store.close()
    empty(tmp_path / DATABASE_NAME)
    with pytest.raises(JobdirCorrupt, match="is empty"):
        addon_settings({"JOBDIR": str(tmp_path)})
    with pytest.raises(JobdirError, match="cannot be read"):  # nor with Scrapy's own JOBDIR
        addon_settings({"JOBDIR": str(tmp_path), "CDP_POOL_JOBDIR_DURABLE": False})


@pytest.mark.usefixtures("usual_umask")
def test_the_add_on_creates_a_missing_jobdir_0700(tmp_path: Path) -> None:
    jobdir = tmp_path / "crawls" / "job"
    addon_settings({"JOBDIR": str(jobdir)})
    assert mode(jobdir) == 0o700
    existing = tmp_path / "mine"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    addon_settings({"JOBDIR": str(existing)})
    assert mode(existing) == 0o755  # the user's own directory is left as it is


def test_a_database_damaged_after_the_start_check_is_still_refused(tmp_path: Path) -> None:
    """The store skips the page scan only for the file check_jobdir() saw."""
    store = JobStore(tmp_path / DATABASE_NAME)
    for n in range(300):
        store.push("0", b"request %d " % n * 20)
    store.close()
    check_jobdir(tmp_path)
    damage_pages(tmp_path / DATABASE_NAME)
    with pytest.raises(JobdirCorrupt, match="SQLite"):
        JobStore(tmp_path / DATABASE_NAME)
