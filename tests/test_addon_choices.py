"""What the project chose explicitly is kept: its own SCHEDULER_PRIORITY_QUEUE
(with a warning saying what that disables), and ``meta["download_warnsize"]``
for rendered requests, logged as plain Scrapy logs it. Real crawls of the test
site with the embedded Lightpanda, compared with plain Scrapy's own log."""

from __future__ import annotations

import logging
import re

import pytest
import pytest_twisted
import scrapy
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.addon import PRIORITY_QUEUE
from tests.crawl import crawl
from tests.servers import SiteServer

WARNSIZE = re.compile(
    r"(?:Expected to receive|Received) (\d+) bytes which is larger than download warn size "
    r"\((\d+)\) in request <GET (\S+)>\."
)
WARN = 300  # bytes: /js?n=200 is over it, raw (416) or rendered; /flaky under
DOWNLOADER_AWARE = "scrapy.pqueues.DownloaderAwarePriorityQueue"


def test_the_addon_installs_its_priority_queue_by_default() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    assert settings["SCHEDULER_PRIORITY_QUEUE"] == PRIORITY_QUEUE


def test_a_priority_queue_the_project_set_is_kept_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings({"SCHEDULER_PRIORITY_QUEUE": DOWNLOADER_AWARE})
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool.addon"):
        Addon().update_settings(settings)
    assert settings["SCHEDULER_PRIORITY_QUEUE"] == DOWNLOADER_AWARE
    [warning] = [r.getMessage() for r in caplog.records if "SCHEDULER_PRIORITY_QUEUE" in r.message]
    assert DOWNLOADER_AWARE in warning
    assert "one profile" in warning


def test_a_subclass_of_the_plugins_queue_is_kept_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = f"{__name__}.OwnQueue"
    settings = Settings({"SCHEDULER_PRIORITY_QUEUE": path})
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool.addon"):
        Addon().update_settings(settings)
    assert settings["SCHEDULER_PRIORITY_QUEUE"] == path
    assert not [r for r in caplog.records if "SCHEDULER_PRIORITY_QUEUE" in r.getMessage()]


def _warnsize_logs(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    found = [WARNSIZE.search(r.getMessage()) for r in caplog.records]
    return [(int(m.group(2)), m.group(3)) for m in found if m is not None]


@pytest_twisted.ensureDeferred
async def test_meta_download_warnsize_is_honoured_for_rendered_requests_as_plain_scrapy_does(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A page over the meta's warn size but under DOWNLOAD_WARNSIZE logs the
    same warning, rendered or not; a page under both logs nothing."""
    big, small = site.url("/js?n=200"), site.url("/flaky?key=warnsize&fail=0")
    logs: dict[bool, list[tuple[int, str]]] = {}
    for rendered in (False, True):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            spider, _ = await crawl(
                [
                    scrapy.Request(big, meta={"cdp": rendered, "download_warnsize": WARN}),
                    scrapy.Request(small, meta={"cdp": rendered}),
                ],
                {"DOWNLOAD_WARNSIZE": 10 * 1024 * 1024},
            )
        assert not spider.failures
        assert len(spider.responses) == 2
        assert len(spider.by_url("n=200").body) > WARN
        assert len(spider.by_url("warnsize").body) < WARN
        logs[rendered] = _warnsize_logs(caplog)
    assert logs[False] == [(WARN, big)]  # plain Scrapy: the reference
    assert logs[True] == logs[False]


class OwnQueue:
    """Stands for a project's subclass of the plugin's queue (only its class
    is looked at here)."""


def _make_own_queue_a_subclass() -> None:
    from scrapy.utils.misc import load_object

    global OwnQueue
    OwnQueue = type("OwnQueue", (load_object(PRIORITY_QUEUE),), {})  # type: ignore[misc]


_make_own_queue_a_subclass()
