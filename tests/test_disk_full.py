"""A full disk under a real ``scrapy crawl`` with JOBDIR (subprocess, embedded
Lightpanda): the JOBDIR on a small real ``tmpfs`` that fills up mid-crawl.
The crawl stops cleanly with one ERROR naming the file and the filesystem,
exits 1, and, once space is freed, the resumed crawl loses nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.jobdir_project.harness import Job
from tests.profiles import token, write_profile
from tests.servers import SiteServer
from tests.small_filesystem import fill, small_tmpfs

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def full_disk() -> Iterator[Path]:
    with small_tmpfs("8m") as directory:
        yield directory


def test_a_full_jobdir_disk_stops_the_crawl_cleanly_and_the_resume_loses_nothing(
    site: SiteServer, tmp_path: Path, full_disk: Path
) -> None:
    """Before: ``sqlite3.OperationalError: database or disk is full`` tracebacks
    in ``next_request``, no ERROR naming the cause, and the crawl stalled
    without stopping. Now: one ERROR ('Disk full: ... on filesystem <mount>
    (tmpfs, ...)'), ``finish_reason`` ``cdp_pool_disk_full``, exit status 1;
    after the space is freed the same command resumes and every page is
    fetched (0 lost)."""
    job = Job(site, tmp_path, token(), total=300, hubs=4)
    jobdir = full_disk / "job"
    run = job.start(JOBDIR=str(jobdir))
    try:
        run.wait_for_item(count=3)  # the database exists and the crawl runs
        filler = fill(full_disk, leave_bytes=256 * 1024)
        status = run.end()
    finally:
        if run.proc.poll() is None:
            run.kill()
    assert status == 1, run.log()
    log = run.log_file.read_text(encoding="utf-8", errors="replace")
    assert "'finish_reason': 'cdp_pool_disk_full'" in log, log[-3000:]
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, log[-8000:]
    assert "Disk full:" in errors[0]
    assert f"on filesystem {full_disk} (tmpfs, " in errors[0]
    assert "Traceback" not in log, log[log.index("Traceback") - 500 :][:3000]
    first_items = {item["n"] for item in job.items()}
    assert len(first_items) < job.total  # it stopped part-way

    filler.unlink()  # space is back
    run = job.start(JOBDIR=str(jobdir))
    run.finish()
    assert "Resuming crawl" in run.log()
    assert {item["n"] for item in job.items()} == set(range(job.total))  # 0 lost
    assert set(job.fetches()) == set(range(job.total))


@pytest.mark.parametrize(
    "on_full_disk",
    ["HTTPCACHE_DIR", "CDP_POOL_FAILURES_FILE", "CDP_POOL_STATUS_FILE", "CDP_POOL_PROFILES_DIR"],
)
@pytest_twisted.ensureDeferred
async def test_a_full_disk_under_a_file_of_the_crawl_stops_the_crawl(
    site: SiteServer, tmp_path: Path, full_disk: Path, on_full_disk: str
) -> None:
    """The HTTP cache, the failures file, the status file or the profiles
    (saved back) on a full tmpfs (a real crawl in this process). Before:
    ``OSError: [Errno 28] No space left on device`` tracebacks (per response,
    failure or sample) or WARNINGs (save-back), and the crawl went on without
    them (``finished``). Now: one ERROR naming the file and the filesystem,
    the crawl stopped cleanly (``cdp_pool_disk_full``), no errback saw the
    disk's error."""
    name = token()
    meta: dict[str, object] = {}
    settings: dict[str, object] = {
        "HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path / "cache"),
        "CDP_POOL_RENDER_ALL": True, "CONCURRENT_REQUESTS": 1,
    }  # fmt: skip
    if on_full_disk == "CDP_POOL_PROFILES_DIR":
        write_profile(full_disk, f"p-{name}", session=f"s-{name}")
        settings.update({"CDP_POOL_PROFILES_DIR": str(full_disk), "HTTPCACHE_ENABLED": False,
                         "CDP_POOL_PROFILE_SAVE_STATE": True})  # fmt: skip
        meta = {"cdp_profile": f"p-{name}"}
    else:
        files = {"HTTPCACHE_DIR": "cache", "CDP_POOL_FAILURES_FILE": "failures.jsonl",
                 "CDP_POOL_STATUS_FILE": "status.jsonl"}  # fmt: skip
        settings[on_full_disk] = str(full_disk / files[on_full_disk])
    fill(full_disk, leave_bytes=0)
    requests = [
        scrapy.Request(site.url(f"/status/404?k={name}&i={i}"), meta=dict(meta)) for i in range(6)
    ]
    spider, crawler = await crawl(requests, settings)
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "cdp_pool_disk_full"
    assert stats["cdp_pool/disk_full"] >= 1
    assert stats["log_count/ERROR"] == 1
    assert not [f for f in spider.failures if "No space" in str(f.value)]
