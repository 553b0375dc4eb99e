"""Issue 40, item 5: a ``CDP_POOL_*`` setting set without the add-on is
warned about once, naming the setting and the ``ADDONS`` line (before, a
crawl that followed docs/cluster.md literally ignored
``CDP_POOL_CLUSTER_REDIS_URL`` without a word).

Real ``scrapy crawl``, ``scrapy runspider`` and ``CrawlerProcess`` runs in a
subprocess, with this checkout first on ``PYTHONPATH``. The warning comes
from the package's ``scrapy.commands`` entry point (``scrapy cdp-pool``),
which Scrapy's command line imports, so the interpreter's environment must
have the package installed with this checkout's metadata (``pip install -e
.``). The spiders request nothing: the check runs once, at the engine's
start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from scrapy_cdp_pool.settings.without_addon import ADDON_LINE
from tests.servers import ROOT

DEADLINE_S = 120  # a hung run fails instead of holding its worker

SPIDER = """
import scrapy


class IdleSpider(scrapy.Spider):
    name = "idle"

    async def start(self):
        return
        yield
"""

SETTINGS = """
BOT_NAME = "idle"
SPIDER_MODULES = ["idle.spiders"]
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
CDP_POOL_BROWSER = "chromium"
CDP_POOL_CONNECTIONS = 2
"""

SCRIPT = """
import scrapy
from scrapy.crawler import CrawlerProcess

import scrapy_cdp_pool  # noqa: F401


class IdleSpider(scrapy.Spider):
    name = "idle"

    async def start(self):
        return
        yield


process = CrawlerProcess({"CDP_POOL_CLUSTER_REDIS_URL": "redis://127.0.0.1:1/0",
                          "TELNETCONSOLE_ENABLED": False})
process.crawl(IdleSpider)
process.crawl(IdleSpider)
process.start()
"""

WARNING = "set but the scrapy_cdp_pool add-on is not enabled"


def _project(directory: Path, settings: str = "") -> Path:
    package = directory / "idle"
    (package / "spiders").mkdir(parents=True)
    (directory / "scrapy.cfg").write_text("[settings]\ndefault = idle.settings\n")
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(SETTINGS + settings)
    (package / "spiders" / "__init__.py").write_text("")
    (package / "spiders" / "idle.py").write_text(SPIDER)
    return directory


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env={**environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=DEADLINE_S, check=False,
    )  # fmt: skip


def _warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if WARNING in line]


def test_the_package_registers_its_scrapy_command() -> None:
    # What makes Scrapy's command line import the package on every `scrapy`
    # command; missing where the environment's install predates it (reinstall).
    [entry] = [e for e in metadata.entry_points(group="scrapy.commands") if e.name == "cdp-pool"]
    assert entry.value == "scrapy_cdp_pool.tools.scrapy_command:Command"


def test_scrapy_crawl_without_the_addon_warns_once(tmp_path: Path) -> None:
    result = _run(_project(tmp_path), "-m", "scrapy", "crawl", "idle")
    assert result.returncode == 0, result.stderr
    [line] = _warnings(result)
    assert "WARNING" in line
    assert "CDP_POOL_BROWSER, CDP_POOL_CONNECTIONS are set" in line
    assert line.endswith(ADDON_LINE)


def test_scrapy_crawl_with_the_addon_does_not_warn(tmp_path: Path) -> None:
    settings = f'{ADDON_LINE}\nCDP_POOL_BROWSER = "lightpanda"\n'
    result = _run(_project(tmp_path, settings), "-m", "scrapy", "crawl", "idle")
    assert result.returncode == 0, result.stderr
    assert "scrapy_cdp_pool.addon.Addon" in result.stderr  # the add-on ran
    assert _warnings(result) == []


def test_scrapy_runspider_without_the_addon_warns_once(tmp_path: Path) -> None:
    (tmp_path / "idle.py").write_text(SPIDER)
    result = _run(tmp_path, "-m", "scrapy", "runspider", "idle.py", "-s", "CDP_POOL_CONNECTIONS=3")
    assert result.returncode == 0, result.stderr
    [line] = _warnings(result)
    assert "CDP_POOL_CONNECTIONS is set" in line
    assert line.endswith(ADDON_LINE)


def test_a_script_that_imports_the_package_warns_once_per_crawler(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SCRIPT)
    result = _run(tmp_path, "script.py")
    assert result.returncode == 0, result.stderr
    lines = _warnings(result)
    assert len(lines) == 2  # two crawlers, one line each
    assert all("CDP_POOL_CLUSTER_REDIS_URL is set" in line for line in lines)


@pytest.mark.parametrize(
    ("settings", "status", "expected"),
    [
        ("", 1, ["add-on: not enabled; add to the project's settings: " + ADDON_LINE,
                 ("settings: valid as parsed (CDP_POOL_BROWSER, CDP_POOL_CONNECTIONS); "
                 "paths, browser binaries and the reactor are checked when a crawl starts, "
                 "not here")]),
        (f"{ADDON_LINE}\nCDP_POOL_CONECTIONS = 2\n", 1,
         ["add-on: enabled (ADDONS)", ("settings: refused: CDP_POOL_CONECTIONS is not a "
          "scrapy_cdp_pool setting; did you mean CDP_POOL_CONNECTIONS?")]),
    ],
)  # fmt: skip
def test_scrapy_cdp_pool_checks_the_project(
    tmp_path: Path, settings: str, status: int, expected: list[str]
) -> None:
    result = _run(_project(tmp_path, settings), "-m", "scrapy", "cdp-pool")
    assert result.returncode == status, result.stderr
    first, *rest = result.stdout.splitlines()
    assert first.startswith("scrapy-cdp-pool ")
    assert rest == expected
