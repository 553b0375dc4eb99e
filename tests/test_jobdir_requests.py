"""In-process crawls with a durable JOBDIR: a request whose meta cannot be
stored fails by name (and is not stored); a finished crawl leaves the JOBDIR
empty; a JOBDIR holding Scrapy's own queue is refused, not ignored."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import JobdirError, UnserializableRequestError
from scrapy_cdp_pool.jobdir import open_jobdir
from tests.crawl import crawl
from tests.servers import SiteServer


@pytest_twisted.ensureDeferred
async def test_unserializable_meta_fails_by_request_and_key(
    site: SiteServer, tmp_path: Path
) -> None:
    jobdir = tmp_path / "job"
    spider, crawler = await crawl(
        [
            scrapy.Request(
                site.url("/js?n=2&locked"), meta={"cdp": True, "lock": threading.Lock()}
            ),
            scrapy.Request(site.url("/js?n=2&plain"), meta={"cdp": True, "cdp_profile": None}),
        ],
        {"JOBDIR": str(jobdir)},
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=2&plain")]
    [failure] = spider.failures
    assert isinstance(failure.value, UnserializableRequestError)
    message = str(failure.value)
    assert "meta['lock']" in message
    assert site.url("/js?n=2&locked") in message
    stats = crawler.stats.get_stats()
    assert stats["scheduler/enqueued/memory"] == 1  # Scrapy kept it in memory...
    assert stats["cdp_pool/jobdir/acked"] == 1  # ...the stored one was finished
    store = open_jobdir(jobdir)
    assert list(store.rows()) == []  # nothing left: the crawl finished
    assert store.fingerprints() == 2
    store.close()


@pytest_twisted.ensureDeferred
async def test_a_jobdir_with_scrapy_s_own_queue_is_refused(
    site: SiteServer, tmp_path: Path
) -> None:
    queue_dir = tmp_path / "job" / "requests.queue"
    queue_dir.mkdir(parents=True)
    (queue_dir / "active.json").write_text(json.dumps({"|127.0.0.1": [0]}))
    with pytest.raises(JobdirError, match=r"holds requests queued by Scrapy's own JOBDIR"):
        await crawl(
            [scrapy.Request(site.url("/js?n=1&refused"))], {"JOBDIR": str(tmp_path / "job")}
        )
