"""A guarded JOBDIR in real crawls (issue 12, items 5 to 7): a second
``scrapy crawl`` on a JOBDIR in use stops at start and takes nothing, and the
JOBDIR its holder left when SIGKILLed resumes; a damaged or empty database
stops ``scrapy crawl`` at start with one ERROR; the files a crawl leaves hold
cookies and ``Authorization`` headers and no other user can read them."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import Crawler

from scrapy_cdp_pool.jobdir.lock import LOCK_NAME, JobdirLock
from scrapy_cdp_pool.jobdir.scheduler import REFUSED_REASON
from scrapy_cdp_pool.jobdir.store import DATABASE_NAME
from tests.crawl import crawl
from tests.jobdir_project.harness import Job
from tests.profiles import token
from tests.servers import SiteServer


@pytest.fixture
def job(site: SiteServer, tmp_path: Path) -> Job:
    return Job(site, tmp_path, token(), total=60, hubs=3)


def error_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "] ERROR:" in line]


def test_a_second_crawl_on_a_jobdir_in_use_is_refused_and_the_first_one_resumes_after_sigkill(
    job: Job,
) -> None:
    first = job.start(HOLD_HUB="1")
    first.wait_for_item(key="hold")  # in the middle of a burst, requests in flight

    second = job.start()
    assert second.end() == 1  # as a bad setting at start
    log = second.log()
    errors = error_lines(log)
    assert len(errors) == 1, log
    assert f"JOBDIR {job.directory / 'job'} is in use by process {first.proc.pid}" in log
    assert "Spider opened" not in log  # refused before its engine started
    assert "Engine slot not assigned" not in log
    assert set(job.fetches().values()) == {1}  # the second crawl fetched nothing again
    assert first.proc.poll() is None  # the first one goes on

    first.kill()  # its lock dies with it
    in_flight = job.stored()[1]
    assert 1 in in_flight
    last = job.start()
    last.finish()
    assert "Resuming crawl" in last.log()
    counts = {item["n"] for item in job.items()}
    assert counts == set(range(job.total))  # nothing lost
    fetched_again = {n for n, count in job.fetches().items() if count > 1}
    assert fetched_again <= in_flight  # only what the killed crawl had in flight
    assert job.stored() == (set(), set())


def damage(path: Path) -> None:
    with path.open("r+b") as file:
        file.write(b"not a database")


def make_empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize(
    ("spoil", "expected"),
    [(damage, "(SQLite: file is not a database)"), (make_empty, "is empty (0 bytes)")],
    ids=["damaged", "empty"],
)
def test_a_damaged_or_empty_database_stops_the_crawl_at_start_with_one_error(
    job: Job, spoil: object, expected: str
) -> None:
    run = job.start(HOLD_HUB="1")
    run.wait_for_item(key="hold")
    run.kill()
    database = job.directory / "job" / DATABASE_NAME
    for companion in (f"{database}-wal", f"{database}-shm"):
        Path(companion).unlink(missing_ok=True)  # the rows are in the WAL: drop it too
    assert callable(spoil)
    spoil(database)
    fetched = job.fetches()

    run = job.start()
    assert run.end() == 1
    log = run.log()
    errors = error_lines(log)
    assert len(errors) == 1, log
    assert f"{database}: " in errors[0] or f"{database}: " in log
    assert expected in log
    assert "resuming" not in log.lower()
    assert "Engine slot not assigned" not in log
    assert job.fetches() == fetched  # nothing fetched, not restarted from zero


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory under /tmp that any user may enter, as a careless user's
    JOBDIR would be (pytest's own tmp_path is root-only)."""
    path = Path(tempfile.mkdtemp(prefix="cdp-jobdir-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def readable_by_nobody(path: Path) -> bool:
    result = subprocess.run(
        ["runuser", "-u", "nobody", "--", "cat", str(path)],
        check=False, capture_output=True, timeout=60, cwd="/",
    )  # fmt: skip
    return result.returncode == 0


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None,
    reason="needs root and runuser to read the files as user nobody",
)
@pytest_twisted.ensureDeferred
async def test_the_files_a_crawl_leaves_in_its_jobdir_are_private(
    site: SiteServer, shared_tmp: Path
) -> None:
    previous = os.umask(0o022)
    try:
        jobdir = shared_tmp / "job"
        jobdir.mkdir(mode=0o755)  # the user made it, readable by all
        jobdir.chmod(0o755)
        spider, _ = await crawl(
            [
                scrapy.Request(
                    site.url(f"/echo?n={n}"),
                    headers={"Authorization": "Bearer s3cret", "Cookie": "session=s3cret"},
                    meta={"cdp": True},
                )
                for n in range(3)
            ],
            {"JOBDIR": str(jobdir)},
        )
        made = shared_tmp / "made-by-the-plugin"
        await crawl(
            [scrapy.Request(site.url("/echo?n=9"), meta={"cdp": True})], {"JOBDIR": str(made)}
        )
    finally:
        os.umask(previous)
    assert len(spider.responses) == 3
    control = shared_tmp / "control.txt"
    control.write_text("anyone may read this")
    control.chmod(0o644)
    assert readable_by_nobody(control)  # the probe works

    database = jobdir / DATABASE_NAME
    files = [database, jobdir / LOCK_NAME, jobdir / "spider.state"]
    files += [p for p in (Path(f"{database}-wal"), Path(f"{database}-shm")) if p.exists()]
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert not readable_by_nobody(path), path
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert not readable_by_nobody(made / DATABASE_NAME)


class TakeTheJobdir:
    """Another crawl taking the JOBDIR between the add-on's check and the
    scheduler's start (an extension is built in between): a stand-in for a
    race that cannot be timed otherwise."""

    locks: ClassVar[list[JobdirLock]] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TakeTheJobdir:
        cls.locks.append(JobdirLock(Path(crawler.settings["JOBDIR"])))
        return cls()


@pytest_twisted.ensureDeferred
async def test_a_jobdir_taken_after_the_check_closes_the_spider_by_name(
    site: SiteServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    try:
        spider, crawler = await crawl(
            [scrapy.Request(site.url("/echo?taken"), meta={"cdp": True})],
            {
                "JOBDIR": str(tmp_path),
                "EXTENSIONS": {f"{__name__}.TakeTheJobdir": 0},
            },
        )
    finally:
        for lock in TakeTheJobdir.locks:
            lock.release()
        TakeTheJobdir.locks.clear()
    assert crawler.stats.get_value("finish_reason") == REFUSED_REASON
    assert not spider.responses
    assert not spider.failures
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    expected = (
        f"JOBDIR {tmp_path} is in use by process {os.getpid()} ({tmp_path / LOCK_NAME} is "
        "locked): two crawls on one JOBDIR would fetch the same requests; wait for that "
        "crawl to end (or stop it), or use another JOBDIR"
    )
    assert [r.getMessage() for r in errors] == [expected]
