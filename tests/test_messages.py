"""Bounded error messages (issue 12, item 8): a page script that throws a
200 KB message leaves a line under the cap, naming the original length, in
the failures file, the log and the exception Scrapy is given."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.browser.cdp import CDPProtocolError
from scrapy_cdp_pool.core.boundary import to_scrapy_error
from scrapy_cdp_pool.errors import ActionError, NavigationFailed, ProfileError
from scrapy_cdp_pool.messages import MESSAGE_LIMIT_CHARS, cap_message
from tests.crawl import RecordingSpider, crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

CHARS = 204800
CUT = re.compile(r"\[message cut: (\d+) characters, (\d+) shown\]")


def test_a_short_message_is_kept_whole() -> None:
    assert cap_message("short") == "short"
    assert cap_message("x" * MESSAGE_LIMIT_CHARS) == "x" * MESSAGE_LIMIT_CHARS


def test_a_long_message_is_cut_naming_its_length() -> None:
    text = "Error: " + "x" * CHARS
    cut = cap_message(text)
    assert len(cut) <= MESSAGE_LIMIT_CHARS
    match = CUT.search(cut)
    assert match is not None
    total, shown = int(match[1]), int(match[2])
    assert total == len(text)
    assert cut.startswith(text[:shown])
    assert cap_message(cut) == cut  # cutting again changes nothing


def test_a_message_built_around_a_cut_one_still_names_the_original_length() -> None:
    inner = "Error: " + "x" * CHARS
    outer = f"https://example.com/: action #0 evaluate['f()']: {cap_message(inner)} (tail)"
    cut = cap_message(outer)
    assert len(cut) <= MESSAGE_LIMIT_CHARS
    assert cut.count("message cut") == 1
    match = CUT.search(cut)
    assert match is not None
    assert int(match[1]) == len(outer.split(": Error")[0]) + len(": ") + len(inner) + len(" (tail)")


def test_errors_of_pages_browsers_and_servers_are_bounded() -> None:
    huge = "y" * CHARS
    errors: list[BaseException] = [
        ActionError(huge),
        NavigationFailed("https://example.com/", huge),
        CDPProtocolError("Runtime.evaluate", -32000, huge),
        to_scrapy_error(CDPProtocolError("Page.navigate", -32000, huge), "<GET https://x/>"),
    ]
    for error in errors:
        assert len(str(error)) <= MESSAGE_LIMIT_CHARS, type(error)
        assert f"message cut: {CHARS}" in str(error) or CUT.search(str(error))


class NoErrbackSpider(RecordingSpider):
    """Scrapy itself logs the failure (no errback), as in most projects."""

    def prepare(self, request: scrapy.Request) -> scrapy.Request:
        return request.replace(callback=self.parse)


@pytest_twisted.ensureDeferred
async def test_a_page_error_of_200_kb_is_cut_in_the_failures_file_and_the_log(
    site: SiteServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failures_file = tmp_path / "failures.jsonl"
    url = site.url(f"/throws?chars={CHARS}")
    with caplog.at_level(logging.DEBUG):
        spider, crawler = await crawl(
            [scrapy.Request(url, meta={"cdp": True, "cdp_actions": [["evaluate", "throwLong()"]]})],
            {"CDP_POOL_FAILURES_FILE": str(failures_file)},
            spider_cls=NoErrbackSpider,
        )
    assert not spider.responses
    lines = failures_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    record: dict[str, Any] = json.loads(lines[0])
    assert record["reason"] == "ActionError"
    message = record["message"]
    assert len(message) <= MESSAGE_LIMIT_CHARS
    assert message.startswith(f"{url}: action #0 evaluate['throwLong()']: Error: xxx")
    match = CUT.search(message)
    assert match is not None
    prefix = f"{url}: action #0 evaluate['throwLong()']: Error: "
    assert int(match[1]) == len(prefix) + CHARS  # the original length, said
    assert len(lines[0]) < MESSAGE_LIMIT_CHARS + 1000

    logged = [r for r in caplog.records if "throwLong" in r.getMessage() or r.exc_info]
    assert logged, "Scrapy logs the failed request"
    for log_record in caplog.records:
        assert len(log_record.getMessage()) <= MESSAGE_LIMIT_CHARS + 500, log_record.getMessage()
    text = caplog.text  # messages and tracebacks, as a log file would have them
    assert "x" * (MESSAGE_LIMIT_CHARS + 1) not in text
    assert f"message cut: {len(prefix) + CHARS} characters" in text
    assert f"message cut: {len('Error: ') + CHARS} characters" in text  # the page's error itself
    assert crawler.stats.get_value("cdp_pool/failures/ActionError") == 1
    assert all(len(key) < 200 for key in crawler.stats.get_stats())


def test_a_profile_error_carrying_a_sign_in_hook_s_long_error_is_bounded() -> None:
    error = ProfileError("ann", f"signing in failed ({'z' * CHARS})")
    assert len(str(error)) <= MESSAGE_LIMIT_CHARS
    assert len(error.reason) <= MESSAGE_LIMIT_CHARS
    assert CUT.search(str(error))
