"""The embedded browser killed as it starts (issue 39, item 2): the binary is
wrapped by a small shell script (``CDP_POOL_LIGHTPANDA_PATH`` /
``CDP_POOL_CHROMIUM_PATH``) that SIGKILLs itself instead of starting the
browser, on its first run only (a marker file) or on every run.

Before: one such kill ended the crawl ``cdp_pool_unavailable`` after 0 pages,
exit status 0. Now a start that fails is tried again, with backoff, up to
``SERVER_START_ATTEMPTS`` times: one kill costs no page; a browser that never
starts ends the crawl with one ERROR naming the cause and exit status 1."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_twisted
import scrapy
from lightpanda.client import find_binary

from scrapy_cdp_pool.browser.pool.pool import SERVER_START_ATTEMPTS
from scrapy_cdp_pool.settings.parse import default_chromium_path
from tests.contract import token
from tests.crawl import crawl
from tests.scrapy_command import run_crawl, write_project
from tests.servers import ROOT, SiteServer

PATH_SETTING = {"lightpanda": "CDP_POOL_LIGHTPANDA_PATH", "chromium": "CDP_POOL_CHROMIUM_PATH"}


def real_binary(browser: str) -> str:
    return str(find_binary()) if browser == "lightpanda" else default_chromium_path()


def dying_binary(directory: Path, browser: str, *, always: bool) -> tuple[Path, Path]:
    """A wrapper of ``browser``'s binary that kills itself (SIGKILL) as it
    starts, on every run (``always``) or on the first only; and the file
    each run that died appends a line to."""
    deaths = directory / "deaths"
    script = directory / f"dying-{browser}"
    die = f'echo died >> "{deaths}"; kill -9 $$'
    if always:
        body = die
    else:  # the first run only: the marker is the deaths file itself
        body = f'if [ ! -e "{deaths}" ]; then {die}; fi\nexec "{real_binary(browser)}" "$@"'
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script, deaths


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_browser_killed_as_it_starts_costs_no_page(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    """Before: ``finish_reason`` ``cdp_pool_unavailable``, 0 of 10 pages."""
    binary, deaths = dying_binary(tmp_path, browser, always=False)
    key = token()
    urls = [site.url(f"/js?n=2&start-kill={key}&i={i}") for i in range(10)]
    spider, crawler = await crawl(
        [scrapy.Request(url, meta={"cdp": True}) for url in urls],
        {"CDP_POOL_BROWSER": browser, PATH_SETTING[browser]: str(binary)},
    )
    assert deaths.read_text().splitlines() == ["died"]  # it was killed once
    assert not spider.failures, [f.value for f in spider.failures]
    assert sorted(r.url for r in spider.responses) == sorted(urls)
    assert all(r.css("p.item::text").getall() == ["item-1", "item-2"] for r in spider.responses)
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "finished"
    assert stats["cdp_pool/server_start_retries"] == 1
    assert stats.get("log_count/ERROR", 0) == 0


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
def test_a_browser_that_never_starts_ends_the_crawl_with_exit_status_1(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    """``scrapy crawl``: each start dies; after ``SERVER_START_ATTEMPTS`` the
    crawl ends with one ERROR naming the cause and the attempts, exit 1
    (before: exit 0 after the first)."""
    binary, deaths = dying_binary(tmp_path, browser, always=True)
    project = write_project(
        tmp_path / "project",
        f"CDP_POOL_BROWSER = {browser!r}\n{PATH_SETTING[browser]} = {str(binary)!r}\n",
    )
    run = run_crawl(project, ["-a", f"base={site.base}"], env={"PYTHONPATH": str(ROOT)})
    assert run.returncode == 1, run.log[-5000:]
    assert len(deaths.read_text().splitlines()) == SERVER_START_ATTEMPTS
    # the plugin's one ERROR (Scrapy adds its own per request without an errback)
    errors = [line for line in run.error_records() if "[scrapy_cdp_pool." in line]
    assert len(errors) == 1, run.log[-5000:]
    assert "The CDP pool is unavailable" in errors[0]
    assert f"{SERVER_START_ATTEMPTS} attempts" in errors[0]
    assert "exited with code -9 at start" in errors[0]
    assert "'finish_reason': 'cdp_pool_unavailable'" in run.log
    assert "exit status 1" in run.log
    assert [item for item in run.items if item["rendered"]] == []


@pytest_twisted.ensureDeferred
async def test_settings_past_lightpandas_flag_ranges_still_start_it(site: SiteServer) -> None:
    """A ``DOWNLOAD_TIMEOUT`` over 24.8 days and a ``CDP_POOL_MAX_MESSAGE_MB``
    of 4096 or more: Lightpanda refused the flags they became (``range
    overflow``), so the crawl ended ``cdp_pool_unavailable`` after three
    starts (found by a fresh-user trial). Now the flags are held to their
    ranges: the page renders."""
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/js?n=2&k={token()}"), meta={"cdp": True})],
        {"DOWNLOAD_TIMEOUT": 2_147_484, "CDP_POOL_MAX_MESSAGE_MB": 8192},
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert len(spider.responses[0].css("p.item")) == 2
    assert crawler.stats.get_value("finish_reason") == "finished"
