"""The Scrapy internals the plugin reads are checked when the add-on starts:
a Scrapy that moved one is refused by version and name. The internals are
taken away with monkeypatch (standing in for a future Scrapy)."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any, ClassVar

import pytest
import pytest_twisted
import scrapy
from scrapy.core import engine as scrapy_engine
from scrapy.core import scraper as scrapy_scraper
from scrapy.core.downloader import Downloader
from scrapy.core.engine import ExecutionEngine
from scrapy.core.scheduler import Scheduler
from scrapy.core.scraper import Scraper
from scrapy.crawler import CrawlerRunner
from scrapy.downloadermiddlewares.downloadtimeout import DownloadTimeoutMiddleware
from scrapy.middleware import MiddlewareManager
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool import Addon, scrapy_internals
from scrapy_cdp_pool.scrapy_internals import ScrapyInternalsError


def test_this_scrapy_has_every_internal_the_plugin_reads() -> None:
    scrapy_internals.check()


class SlotWithoutInprogress:
    def __init__(self, close_if_idle: bool, nextcall: object, scheduler: object) -> None:
        self.nextcall = nextcall


def test_an_engine_slot_without_its_request_set_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scrapy_engine, "_Slot", SlotWithoutInprogress)
    version = scrapy.__version__.replace(".", r"\.")
    with pytest.raises(ScrapyInternalsError, match=rf"Scrapy {version}: .*inprogress"):
        Addon().update_settings(Settings())


def test_a_scheduler_without_its_disk_queue_hooks_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(Scheduler, "_read_dqs_state")
    with pytest.raises(ScrapyInternalsError, match=r"Scheduler\._read_dqs_state is missing"):
        Addon().update_settings(Settings())


def test_the_engine_is_read_only_while_a_spider_is_open() -> None:
    crawler = get_crawler()
    assert scrapy_internals.requests_in_progress(crawler) == frozenset()
    scrapy_internals.wake_engine(crawler)  # before the engine exists: nothing


def test_the_check_needs_no_reactor_so_a_crawler_process_can_add_crawls_before_start() -> None:
    """``CrawlerProcess.crawl()`` runs the add-ons before ``start()`` installs
    the reactor (the README's script example): the check must not need one."""
    script = (
        "import scrapy\n"
        "from scrapy.crawler import CrawlerProcess\n"
        "class S(scrapy.Spider):\n"
        "    name = 's'\n"
        "process = CrawlerProcess({'ADDONS': {'scrapy_cdp_pool.Addon': 0}})\n"
        "process.crawl(S)\n"
        "print('added')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "added"
    # crawl() logs a failure of its add-ons instead of raising it
    assert "Traceback" not in done.stderr, done.stderr


# Issue 29, item 3: what telemetry (and the cookie jar and the render ladder)
# read of the engine is checked at start too. Each internal is taken away from
# the real Scrapy class (monkeypatch stands in for a future Scrapy).


def _init_without(cls: type, name: str) -> object:
    """``cls.__init__`` as a future Scrapy without ``self.<name>`` would
    have it (its code stores every other attribute the real one stores)."""
    stored = sorted(scrapy_internals._assigned_by_init(cls) - {name})
    namespace: dict[str, object] = {}
    body = "".join(f"    self.{attr} = None\n" for attr in stored) or "    pass\n"
    exec(f"def __init__(self, *args, **kwargs):\n{body}", namespace)  # noqa: S102
    return namespace["__init__"]


@pytest.mark.parametrize(
    ("cls", "name", "named"),
    [
        (ExecutionEngine, "downloader", "engine.downloader"),
        (ExecutionEngine, "scraper", "engine.scraper"),
        (Downloader, "active", "engine.downloader.active"),
        (Downloader, "middleware", "engine.downloader.middleware"),
        (MiddlewareManager, "middlewares", "engine.downloader.middleware.middlewares"),
        (Scraper, "slot", "engine.scraper.slot"),
        (scrapy_scraper.Slot, "active_size", "engine.scraper.slot.active_size"),
        (scrapy_scraper.Slot, "max_active_size", "engine.scraper.slot.max_active_size"),
        (Scheduler, "df", "Scheduler.df"),
        (Scheduler, "dqdir", "Scheduler.dqdir"),
    ],
)  # fmt: skip
def test_an_internal_telemetry_or_the_scheduler_reads_is_refused_by_name_at_start(
    monkeypatch: pytest.MonkeyPatch, cls: type, name: str, named: str
) -> None:
    monkeypatch.setattr(cls, "__init__", _init_without(cls, name))
    version = scrapy.__version__.replace(".", r"\.")
    with pytest.raises(ScrapyInternalsError, match=rf"Scrapy {version}: .*\({re.escape(named)}\)"):
        Addon().update_settings(Settings())


def test_a_scraper_slot_without_needs_backout_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(scrapy_scraper.Slot, "needs_backout")
    with pytest.raises(ScrapyInternalsError, match=r"engine\.scraper\.slot\.needs_backout"):
        Addon().update_settings(Settings())


def test_an_engine_without_its_scheduler_property_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(ExecutionEngine, "scheduler")
    with pytest.raises(ScrapyInternalsError, match=r"ExecutionEngine\.scheduler"):
        Addon().update_settings(Settings())


def test_a_scraper_slot_class_made_private_upstream_is_still_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What upstream has discussed: ``scraper.Slot`` renamed ``_Slot``, its
    attributes kept: the plugin's reads still work, so the check passes."""
    monkeypatch.setattr(scrapy_scraper, "_Slot", scrapy_scraper.Slot, raising=False)
    monkeypatch.delattr(scrapy_scraper, "Slot")
    scrapy_internals.check()
    monkeypatch.delattr(scrapy_scraper, "_Slot")
    with pytest.raises(ScrapyInternalsError, match=r"scrapy\.core\.scraper\.Slot"):
        scrapy_internals.check()


def test_the_engine_readers_before_a_crawl() -> None:
    crawler = get_crawler()
    assert scrapy_internals.active_download_count(crawler) == 0
    assert scrapy_internals.running_scheduler(crawler) is None
    assert scrapy_internals.scraper_load(crawler) is None
    assert scrapy_internals.running_downloader_middleware(crawler, object) is None


class ReadingSpider(scrapy.Spider):
    """Reads the engine from its callback, in a real (plain, ``data:``) crawl."""

    name = "reading"
    seen: ClassVar[list[tuple[Any, ...]]] = []

    async def start(self) -> Any:
        yield scrapy.Request("data:text/html,<p>hello</p>")

    def parse(self, response: scrapy.http.Response) -> None:
        crawler = self.crawler
        self.seen.append(
            (
                scrapy_internals.active_download_count(crawler),
                scrapy_internals.running_scheduler(crawler),
                scrapy_internals.scraper_load(crawler),
                scrapy_internals.running_downloader_middleware(crawler, DownloadTimeoutMiddleware),
                response.request in scrapy_internals.requests_in_progress(crawler),
            )
        )


@pytest_twisted.ensureDeferred
async def test_the_engine_readers_in_a_real_crawl() -> None:
    ReadingSpider.seen.clear()
    runner = CrawlerRunner({"TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "WARNING"})
    crawler = runner.create_crawler(ReadingSpider)
    await runner.crawl(crawler)
    [(downloads, scheduler, load, timeout_mw, in_progress)] = ReadingSpider.seen
    assert downloads == 0  # the response is with the scraper, no longer downloading
    assert isinstance(scheduler, Scheduler)
    assert load is not None
    assert load.active_size > 0  # the response being scraped counts
    assert load.max_active_size == crawler.settings.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE")
    assert load.needs_backout is False
    assert isinstance(timeout_mw, DownloadTimeoutMiddleware)
    assert in_progress
    after = scrapy_internals.scraper_load(crawler)  # Scrapy keeps the closed slot
    assert after is None or after.active_size == 0
