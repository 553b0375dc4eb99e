"""A JOBDIR whose disk turns read-only mid-crawl (issue 39, item 1): a real
``scrapy crawl`` with its JOBDIR on a loop-mounted ext4 image mounted with
``errors=remount-ro``; the kernel is made to report a file system error on it
(sysfs ``trigger_fs_error``), so it aborts its journal and turns the file
system read-only under the open database, as after a disk's I/O error.

Before: tracebacks (``sqlite3.OperationalError: disk I/O error``), no ERROR
naming the file, a crawl that never stopped and exited 0 after SIGINT. Now:
one ERROR naming the database, its filesystem (mounted read-only) and the
cause, ``finish_reason`` ``cdp_pool_disk_error``, exit status 1; once the disk
is repaired (``e2fsck``) the same command resumes and every page is fetched
(0 lost); with ``CDP_POOL_JOBDIR_FSYNC`` only the requests in flight at the
stop are fetched again (without it, what the kernel had not yet written when
the file system failed is gone: measured, the whole first run redone)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jobdir_project.harness import Job
from tests.profiles import token
from tests.servers import SiteServer
from tests.small_filesystem import ext4_image, fail_disk, repair_and_remount

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def disk() -> Iterator[Path]:
    with ext4_image("64M") as mount_point:
        yield mount_point


@pytest.mark.parametrize("fsync", [False, True], ids=["default", "fsync"])
def test_a_jobdir_disk_turned_read_only_stops_the_crawl_and_the_resume_loses_nothing(
    site: SiteServer, tmp_path: Path, disk: Path, fsync: bool
) -> None:
    job = Job(site, tmp_path, token(), total=300, hubs=4)
    job.settings["CDP_POOL_JOBDIR_FSYNC"] = str(fsync)
    jobdir = disk / "job"
    run = job.start(JOBDIR=str(jobdir))
    try:
        run.wait_for_item(count=3)  # the database exists and the crawl runs
        fail_disk(disk)
        status = run.end()
    finally:
        if run.proc.poll() is None:
            run.kill()
    log = run.log()
    assert status == 1, log[-5000:]
    assert "'finish_reason': 'cdp_pool_disk_error'" in log, log[-3000:]
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, "\n".join(errors)[-8000:]
    assert "Disk read-only or failing:" in errors[0]
    assert f"{jobdir / 'cdp_pool.sqlite3'}" in errors[0]
    # "mounted read-only" too once the kernel's remount is seen (it may come
    # a moment after the first refused write)
    assert f"on filesystem {disk} (ext4, " in errors[0]
    assert "(OperationalError: disk I/O error)" in errors[0]
    assert "Traceback" not in log, log[log.index("Traceback") - 500 :][:3000]
    first_items = {item["n"] for item in job.items()}
    assert len(first_items) < job.total  # it stopped part-way

    repair_and_remount(disk)
    run = job.start(JOBDIR=str(jobdir))
    run.finish()
    resumed = re.search(r"resuming; (\d+) requests that were in flight", run.log())
    assert resumed, run.log()[-5000:]
    assert {item["n"] for item in job.items()} == set(range(job.total))  # 0 lost
    fetches = job.fetches()
    assert set(fetches) == set(range(job.total))
    twice = [n for n, count in fetches.items() if count > 1]
    if fsync:  # every commit reached the disk: only the requests in flight are redone
        assert len(twice) <= int(resumed.group(1)), (twice, resumed.group(0))
    # without it the kernel drops what it had not written when the file system
    # fails (ext4: up to its 5 s journal commit), so more may be redone; none lost
