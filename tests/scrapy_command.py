"""Real ``scrapy crawl`` runs in a subprocess, for what only a whole command
shows (issue 29): a project written into a test's directory, a Python whose
``import lightpanda`` fails, Scrapy's reactorless mode.

:func:`write_project` writes a one-spider project (``probe``): it requests
the test site's ``/js?n=3`` rendered (``meta["cdp"]``) and ``/js?n=4`` plain
and yields one item per response: ``{"url", "rendered", "status"}``,
``rendered`` being true when the page's script ran (its items are in the
body). :func:`run_crawl` runs ``scrapy crawl probe`` there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CRAWL_DEADLINE_S = 150
"""A hung crawl fails the test instead of holding its worker (not a timing
assertion: a crawl here takes a few seconds)."""

SETTINGS = """
BOT_NAME = "probe"
SPIDER_MODULES = ["probe.spiders"]
ADDONS = {"scrapy_cdp_pool.Addon": 0}
ROBOTSTXT_OBEY = False
TELNETCONSOLE_ENABLED = False
RETRY_ENABLED = False
LOG_LEVEL = "INFO"
CDP_POOL_CONNECTIONS = 2
"""

SPIDER = """
import scrapy


class ProbeSpider(scrapy.Spider):
    name = "probe"

    async def start(self):
        yield scrapy.Request(self.base + "/js?n=3", meta={"cdp": True})
        yield scrapy.Request(self.base + "/js?n=4")

    def parse(self, response):
        yield {
            "url": response.url,
            "rendered": b"item-1" in response.body,
            "status": response.status,
        }
"""

#: what puts ``import lightpanda`` (or another top-level module) out of reach
#: (``sitecustomize`` runs at interpreter start): a meta path finder that
#: answers every import of it as an absent distribution would, with
#: ModuleNotFoundError; ``{name!r}`` is filled in by :func:`write_blocker`
BLOCKER = """
import sys

_BLOCKED = {name!r}


class _Blocker:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == _BLOCKED or name.startswith(_BLOCKED + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.modules.pop(_BLOCKED, None)
sys.meta_path.insert(0, _Blocker())
"""


@dataclass
class CrawlRun:
    returncode: int
    log: str
    items: list[dict[str, Any]]

    def error_records(self) -> list[str]:
        """The log's ERROR records (a traceback belongs to its record)."""
        return [line for line in self.log.splitlines() if "] ERROR:" in line]


def write_project(directory: Path, settings: str = "") -> Path:
    """The ``probe`` project in ``directory``, with ``settings`` (Python
    lines) appended to its settings module; returns ``directory``."""
    package = directory / "probe"
    (package / "spiders").mkdir(parents=True)
    (directory / "scrapy.cfg").write_text("[settings]\ndefault = probe.settings\n")
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(SETTINGS + settings)
    (package / "spiders" / "__init__.py").write_text("")
    (package / "spiders" / "probe.py").write_text(SPIDER)
    return directory


def write_blocker(directory: Path, name: str = "lightpanda") -> Path:
    """A ``sitecustomize.py`` in ``directory`` (put it on ``PYTHONPATH``)
    that makes ``import <name>`` fail; returns ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(BLOCKER.format(name=name))
    return directory


def run_crawl(
    project: Path,
    args: list[str],
    *,
    spider: str = "probe",
    python: str = sys.executable,
    env: dict[str, str] | None = None,
) -> CrawlRun:
    """``python -m scrapy crawl <spider> -O items.jsonl <args>`` in ``project``,
    with ``env`` over the environment minus ``PYTHONPATH`` (the project and
    the interpreter's own packages only)."""
    output = project / "items.jsonl"
    output.unlink(missing_ok=True)
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [python, "-m", "scrapy", "crawl", spider, "-O", str(output), *args],
        cwd=project, env={**environ, **(env or {})}, capture_output=True, text=True,
        timeout=CRAWL_DEADLINE_S, check=False,
    )  # fmt: skip
    items = []
    if output.exists():
        items = [json.loads(line) for line in output.read_text().splitlines() if line]
    return CrawlRun(result.returncode, result.stdout + result.stderr, items)
