"""Exit statuses a scheduler can trust (issue 39, item 8): one rule, a crawl
that did not finish its work exits non-zero, however it is run: ``scrapy
crawl``, ``scrapy runspider``, and a ``CrawlerProcess`` script ending with
``sys.exit(scrapy_cdp_pool.exit_status(process))`` (the documented way).

The failure is real: the embedded Lightpanda's binary is wrapped by a script
that SIGKILLs itself at every start, so the pool never starts and the crawl
ends ``cdp_pool_unavailable``. Before: exit status 0 from ``scrapy crawl``
and ``runspider`` (``cdp_pool_unavailable`` was not a failing reason), and a
``CrawlerProcess`` script had no way to tell (its log said "exit status 1"
for a full disk, the script exited 0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from lightpanda.client import find_binary

from tests.scrapy_command import CRAWL_DEADLINE_S, run_crawl, write_project
from tests.servers import ROOT, SiteServer
from tests.test_server_start_faults import dying_binary

SCRIPT = """
import sys

import scrapy
from scrapy.crawler import CrawlerProcess

import scrapy_cdp_pool


class ProbeSpider(scrapy.Spider):
    name = "probe"
    custom_settings = {{
        "ADDONS": {{"scrapy_cdp_pool.Addon": 0}},
        "CDP_POOL_LIGHTPANDA_PATH": {binary!r},
        "CDP_POOL_CONNECTIONS": 2,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
    }}

    async def start(self):
        yield scrapy.Request({url!r}, meta={{"cdp": True}})

    def parse(self, response):
        yield {{"url": response.url, "rendered": b"item-1" in response.body}}


if __name__ == "__main__":
    process = CrawlerProcess()
    crawler = process.create_crawler(ProbeSpider)
    process.crawl(crawler)
    process.start()
    print("crawler's exit status:", scrapy_cdp_pool.exit_status(crawler))
    sys.exit(scrapy_cdp_pool.exit_status(process))
"""


def write_script(directory: Path, site: SiteServer, binary: str) -> Path:
    script = directory / "probe_spider.py"
    script.write_text(SCRIPT.format(binary=binary, url=site.url("/js?n=2&exit-status")))
    return script


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=CRAWL_DEADLINE_S, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("fails", [True, False], ids=["unavailable", "finished"])
def test_a_crawler_process_script_exits_as_scrapy_crawl_does(
    site: SiteServer, tmp_path: Path, fails: bool
) -> None:
    binary = dying_binary(tmp_path, "lightpanda", always=True)[0] if fails else find_binary()
    script = write_script(tmp_path, site, str(binary))
    done = run([sys.executable, str(script)], tmp_path)
    log = done.stdout + done.stderr
    assert done.returncode == (1 if fails else 0), log[-5000:]
    assert f"crawler's exit status: {1 if fails else 0}" in done.stdout, log[-5000:]
    reason = "cdp_pool_unavailable" if fails else "finished"
    assert f"'finish_reason': '{reason}'" in log


def test_runspider_exits_1_when_the_pool_is_unavailable(site: SiteServer, tmp_path: Path) -> None:
    binary, _ = dying_binary(tmp_path, "lightpanda", always=True)
    script = write_script(tmp_path, site, str(binary))
    done = run([sys.executable, "-m", "scrapy", "runspider", str(script)], tmp_path)
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-5000:]
    assert "'finish_reason': 'cdp_pool_unavailable'" in log
    assert "exit status 1" in log


def test_scrapy_crawl_exits_1_when_the_pool_is_unavailable(
    site: SiteServer, tmp_path: Path
) -> None:
    binary, _ = dying_binary(tmp_path, "lightpanda", always=True)
    project = write_project(tmp_path / "project", f"CDP_POOL_LIGHTPANDA_PATH = {str(binary)!r}\n")
    done = run_crawl(project, ["-a", f"base={site.base}"], env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.log[-5000:]
    assert "'finish_reason': 'cdp_pool_unavailable'" in done.log
