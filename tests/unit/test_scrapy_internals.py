"""The Scrapy internals the plugin reads are checked when the add-on starts:
a Scrapy that moved one is refused by version and name. The internals are
taken away with monkeypatch (standing in for a future Scrapy)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import scrapy
from scrapy.core import engine as scrapy_engine
from scrapy.core.scheduler import Scheduler
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
