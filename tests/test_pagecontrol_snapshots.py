"""Failure snapshots (``CDP_POOL_SNAPSHOT_DIR``, issue 18 item 6) on both
embedded backends: a failed render leaves its HTML, a PNG screenshot and a JSON
line named by the request's fingerprint, private, capped in count and size."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon
from tests.crawl import crawl
from tests.servers import SiteServer

BACKENDS = ["lightpanda", "chromium"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _failing(site: SiteServer, n: int) -> scrapy.Request:
    return scrapy.Request(
        site.url(f"/pc/init?fail={n}"),
        meta={"cdp": True, "cdp_actions": [["wait_for_selector", "#never", {"timeout": 0.5}]]},
    )


def _lines(directory: Path) -> list[dict[str, Any]]:
    text = (directory / "errors.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_failed_action_leaves_html_screenshot_and_error_line(
    site: SiteServer, browser: str, tmp_path: Path
) -> None:
    directory = tmp_path / "snaps"
    spider, crawler = await crawl(
        [_failing(site, 1), scrapy.Request(site.url("/pc/init?ok=1"), meta={"cdp": True})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_SNAPSHOT_DIR": str(directory)},
    )
    assert len(spider.failures) == 1
    assert len(spider.responses) == 1
    fingerprint = crawler.request_fingerprinter.fingerprint(spider.failures[0].request).hex()
    (line,) = _lines(directory)
    assert line["fingerprint"] == fingerprint
    assert line["url"] == site.url("/pc/init?fail=1")
    # the action's own timeout: ActionTimeout, a TimeoutError naming what it waited for
    assert line["error"].startswith("ActionTimeout: ")
    # names the selector; why no element matched ("no element matches #never")
    # is added when a probe answered before the timeout, not on a loaded machine
    assert "#never" in line["error"]
    assert "action #0 wait_for_selector['#never'] timed out" in line["error"]
    assert line["files"] == [f"{fingerprint}.html", f"{fingerprint}.png"]
    assert line["skipped"] == {}
    html = (directory / f"{fingerprint}.html").read_text(encoding="utf-8")
    assert '<p id="seen">' in html
    assert (directory / f"{fingerprint}.png").read_bytes().startswith(PNG_MAGIC)
    assert _mode(directory) == 0o700
    assert {_mode(p) for p in directory.iterdir()} == {0o600}
    assert sorted(p.name for p in directory.iterdir()) == sorted([*line["files"], "errors.jsonl"])
    assert crawler.stats.get_value("cdp_pool/snapshots_written") == 1


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_snapshots_are_capped_in_count_and_size(
    site: SiteServer, browser: str, tmp_path: Path
) -> None:
    spider, crawler = await crawl(
        [_failing(site, n) for n in range(3)],
        {
            "CDP_POOL_BROWSER": browser,
            "CDP_POOL_SNAPSHOT_DIR": str(tmp_path),
            "CDP_POOL_SNAPSHOT_MAX_COUNT": 2,
            "CDP_POOL_SNAPSHOT_MAX_MB": 100 / 1024 / 1024,  # 100 bytes: less than either file
            "CDP_POOL_CONNECTIONS": 1,
        },
    )
    assert len(spider.failures) == 3
    lines = _lines(tmp_path)
    assert len(lines) == 2
    for line in lines:
        assert line["files"] == []
        fingerprint = line["fingerprint"]
        assert set(line["skipped"]) == {f"{fingerprint}.html", f"{fingerprint}.png"}
        assert "over CDP_POOL_SNAPSHOT_MAX_MB" in line["skipped"][f"{fingerprint}.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["errors.jsonl"]  # noqa: ASYNC240
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/snapshots_written"] == 2
    assert stats["cdp_pool/snapshots_skipped"] == 1


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_navigation_timeout_leaves_a_snapshot(
    site: SiteServer, browser: str, tmp_path: Path
) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/never?snap=1"), meta={"cdp": True})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_SNAPSHOT_DIR": str(tmp_path),
         "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 1},
    )  # fmt: skip
    assert len(spider.failures) == 1
    (line,) = _lines(tmp_path)
    assert line["url"] == site.url("/never?snap=1")
    assert line["error"].startswith("TimeoutError")
    assert len(line["files"]) == 2, line["skipped"]


def test_a_snapshot_dir_that_cannot_be_created_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match=r"CDP_POOL_SNAPSHOT_DIR: '/etc/passwd/snaps' cannot be"):
        Addon().update_settings(
            Settings({"CDP_POOL_SNAPSHOT_DIR": "/etc/passwd/snaps"}, priority="project")
        )


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_download_timeout_leaves_a_snapshot_and_still_fails_as_a_timeout(
    site: SiteServer, browser: str, tmp_path: Path
) -> None:
    # After a first page, so that the browser's start is not in the 2 s.
    def then(spider: Any, response: Any) -> list[scrapy.Request]:
        meta = {"cdp": True, "download_timeout": 2}
        return [scrapy.Request(site.url("/never?dl=1"), meta=meta)]

    spider, _ = await crawl(
        [scrapy.Request(site.url("/pc/init?dl=0"), meta={"cdp": True, "then": then})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_SNAPSHOT_DIR": str(tmp_path)},
    )
    assert len(spider.failures) == 1
    assert "download_timeout" in str(spider.failures[0].value)
    (line,) = _lines(tmp_path)
    assert line["error"].startswith("CancelledError: the render was cut short")
    assert len(line["files"]) == 2, line["skipped"]


@pytest_twisted.ensureDeferred
async def test_a_chromium_page_stuck_in_script_leaves_a_readable_snapshot(
    site: SiteServer, tmp_path: Path
) -> None:
    """The stuck page's script is stopped once named (``PageScriptStalled``):
    the snapshot reads the page as far as it got, screenshot included."""
    meta = {"cdp": True, "download_timeout": 6}  # its document arrives in time under load
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/busy-loop?snap=1"), meta=meta)],
        {"CDP_POOL_BROWSER": "chromium", "CDP_POOL_SNAPSHOT_DIR": str(tmp_path)},
    )
    assert len(spider.failures) == 1
    fingerprint = crawler.request_fingerprinter.fingerprint(spider.failures[0].request).hex()
    (line,) = _lines(tmp_path)
    assert line["error"].startswith("PageScriptStalled: ")
    assert line["files"] == [f"{fingerprint}.html", f"{fingerprint}.png"], line["skipped"]
    assert '<p id="before">before</p>' in (tmp_path / f"{fingerprint}.html").read_text()
