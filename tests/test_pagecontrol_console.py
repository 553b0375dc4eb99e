"""Console messages and uncaught page errors (``meta["cdp_console"]``, issue 18
item 7) on both embedded backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.render._page.console import MAX_MESSAGES, MESSAGE_LIMIT_CHARS
from scrapy_cdp_pool.render._request.snapshots import ERRORS_FILE
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = ["lightpanda", "chromium"]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_console_messages_and_the_uncaught_error_come_back_in_order(
    site: SiteServer, browser: str
) -> None:
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/pc/console?k=1"), meta={"cdp": True, "cdp_console": True}),
         scrapy.Request(site.url("/pc/console?k=off"), meta={"cdp": True})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    assert not spider.failures, spider.failures
    response = spider.by_url("k=1")
    assert response.meta["cdp_console"] is True  # the request's flag is left as it was
    messages = response.meta["cdp_console_messages"]
    assert [m["type"] for m in messages] == ["log", "warning", "error", "exception"], messages
    assert messages[0]["text"] == "hello 42 true null"
    assert messages[1]["text"] == "careful"
    assert len(messages[2]["text"]) <= MESSAGE_LIMIT_CHARS
    assert "[message cut: 5000 characters" in messages[2]["text"]
    assert "boom from the page" in messages[3]["text"]
    assert all(m["timing"] >= 0 for m in messages)
    assert "cdp_console_messages" not in spider.by_url("k=off").meta
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/console_messages"] == 3
    assert stats["cdp_pool/page_errors"] == 1


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_page_logging_in_a_loop_keeps_a_bounded_count(
    site: SiteServer, browser: str
) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/pc/console?n=500"), meta={"cdp": True, "cdp_console": True})],
        {"CDP_POOL_BROWSER": browser},
    )
    assert not spider.failures, spider.failures
    messages = spider.responses[0].meta["cdp_console_messages"]
    assert len(messages) == MAX_MESSAGES + 1
    assert messages[-1]["type"] == "truncated"
    # 3 + 500 logs and 1 exception, MAX_MESSAGES kept
    assert messages[-1]["text"].startswith(f"{504 - MAX_MESSAGES} more messages not kept")


@pytest_twisted.ensureDeferred
async def test_a_bad_console_value_fails_its_request_by_name(site: SiteServer) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/pc/console?k=bad"), meta={"cdp": True, "cdp_console": "yes"}),
         scrapy.Request(site.url("/pc/console?k=good"), meta={"cdp": True})],
    )  # fmt: skip
    assert len(spider.failures) == 1
    message = str(spider.failures[0].value)
    assert "k=bad" in message
    assert "meta['cdp_console'] = 'yes'" in message
    assert [r.url for r in spider.responses] == [site.url("/pc/console?k=good")]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_failed_renders_console_messages_travel_with_the_failure(
    site: SiteServer, browser: str, tmp_path: Path
) -> None:
    # Issue 27: an action that times out on a page that logged and threw; the
    # page's own words reach the errback, the failures file and the snapshot.
    failures_file = tmp_path / "failures.jsonl"
    snapshots = tmp_path / "snapshots"
    meta = {"cdp": True, "cdp_console": True, "cdp_actions": [["wait_for_selector", "#never"]]}
    spider, _ = await crawl(
        [scrapy.Request(site.url("/pc/console?k=1"), meta=meta)],
        {
            "CDP_POOL_BROWSER": browser,
            "CDP_POOL_FAILURES_FILE": str(failures_file),
            "CDP_POOL_SNAPSHOT_DIR": str(snapshots),
            "CDP_POOL_ACTION_TIMEOUT_SECONDS": 1,
        },
    )
    [failure] = spider.failures
    messages = failure.request.meta["cdp_console_messages"]
    assert [m["type"] for m in messages] == ["log", "warning", "error", "exception"], messages
    assert "boom from the page" in messages[3]["text"]
    [line] = [json.loads(text) for text in failures_file.read_text().splitlines()]
    assert "wait_for_selector" in line["message"], line
    assert line["console"] == messages
    [snapshot] = [json.loads(text) for text in (snapshots / ERRORS_FILE).read_text().splitlines()]
    assert snapshot["console"][:4] == messages
