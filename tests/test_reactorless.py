"""Issue 29, item 2: Scrapy's reactorless mode (``TWISTED_REACTOR_ENABLED =
False``, Scrapy 2.19). Scrapy writes its aiohttp handler for http and https
into ``DOWNLOAD_HANDLERS_BASE`` at the project's priority after the add-ons
ran; the add-on's handler is set at least as high, so it still wins, and the
aiohttp handler becomes the fallback for plain requests. The pool runs on the
asyncio loop, which the reactorless crawl runs too: rendered requests render.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool.addon import AIOHTTP_HANDLER, HANDLER, Addon
from tests.scrapy_command import run_crawl, write_project
from tests.servers import SiteServer


def test_the_addons_handler_stays_above_scrapys_reactorless_defaults() -> None:
    settings = Settings({"TWISTED_REACTOR_ENABLED": False})
    Addon().update_settings(settings)
    # what Crawler._apply_reactorless_default_settings does after the add-ons
    for scheme in ("http", "https"):
        settings["DOWNLOAD_HANDLERS_BASE"][scheme] = AIOHTTP_HANDLER
    handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
    assert handlers["http"] == handlers["https"] == HANDLER
    assert settings.getdict("CDP_POOL_FALLBACK_HANDLERS") == {
        "http": AIOHTTP_HANDLER,
        "https": AIOHTTP_HANDLER,
    }


def test_a_projects_own_handler_stays_the_fallback_in_reactorless_mode() -> None:
    settings = Settings({"TWISTED_REACTOR_ENABLED": False})
    settings.set("DOWNLOAD_HANDLERS", {"https": "my.project.Handler"}, "project")
    Addon().update_settings(settings)
    assert settings.getdict("CDP_POOL_FALLBACK_HANDLERS") == {
        "http": AIOHTTP_HANDLER,
        "https": "my.project.Handler",
    }


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
def test_a_reactorless_scrapy_crawl_renders_and_sends_plain_requests_through_aiohttp(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    project = write_project(
        tmp_path,
        f'TWISTED_REACTOR_ENABLED = False\nCDP_POOL_BROWSER = "{browser}"\nLOG_LEVEL = "DEBUG"\n',
    )
    run = run_crawl(project, ["-a", f"base={site.base}"])
    assert run.returncode == 0, run.log
    assert "Not using a Twisted reactor" in run.log
    assert run.error_records() == [], run.log
    rendered = {item["url"].rsplit("=", 1)[1]: item["rendered"] for item in run.items}
    assert rendered == {"3": True, "4": False}, run.log
    assert "cdp_pool/render_seconds_max" in run.log  # the rendered one went through the pool
    # the plain one through Scrapy's aiohttp handler (it says so when built)
    assert "AiohttpDownloadHandler is experimental" in run.log
    assert "'finish_reason': 'finished'" in run.log
