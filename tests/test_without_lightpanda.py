"""Issue 29, item 1: the ``lightpanda`` package is an extra. Where it is not
installed, a Chromium crawl runs and the default backend is refused at start,
by name, with what to do instead; ``scrapy crawl`` exits 1 with one ERROR.

The package is put out of reach by a ``sitecustomize`` on ``PYTHONPATH`` whose
meta path finder raises ModuleNotFoundError for ``lightpanda`` (see
:data:`tests.scrapy_command.BLOCKER`), in a real ``scrapy crawl`` subprocess.
Faithful for the plugin: its one contact with the package is
``import lightpanda.client`` (``LightpandaServer.binary``), which fails there
exactly as on a machine without the distribution; what stays on disk (the
binary, its metadata) is never looked up by the plugin otherwise. A venv
truly without it is tested too, from the built wheel, in
tests/test_install.py (needs PyPI).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.scrapy_command import run_crawl, write_blocker, write_project
from tests.servers import SiteServer


def test_the_blocker_makes_import_lightpanda_fail(tmp_path: Path) -> None:
    blocker = write_blocker(tmp_path / "blocker")
    code = "import lightpanda.client"
    result = subprocess.run(
        [sys.executable, "-c", code], env={"PYTHONPATH": str(blocker)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "ModuleNotFoundError: No module named 'lightpanda'" in result.stderr


def test_a_chromium_crawl_runs_without_the_lightpanda_package(
    site: SiteServer, tmp_path: Path
) -> None:
    blocker = write_blocker(tmp_path / "blocker")
    project = write_project(tmp_path / "project", 'CDP_POOL_BROWSER = "chromium"\n')
    run = run_crawl(project, ["-a", f"base={site.base}"], env={"PYTHONPATH": str(blocker)})
    assert run.returncode == 0, run.log
    assert run.error_records() == [], run.log
    rendered = {item["url"].rsplit("=", 1)[1]: item["rendered"] for item in run.items}
    assert rendered == {"3": True, "4": False}, run.log
    # Lightpanda is never mentioned, but for the start-up sweep of private
    # directories that killed crawls left behind, which may name one of a
    # Lightpanda server (another test's crawl, SIGKILLed)
    said = [
        line
        for line in run.log.lower().splitlines()
        if "lightpanda" in line and "left by crawls that were killed" not in line
    ]
    assert said == [], run.log


def test_the_default_backend_is_refused_at_start_without_the_lightpanda_package(
    site: SiteServer, tmp_path: Path
) -> None:
    blocker = write_blocker(tmp_path / "blocker")
    project = write_project(tmp_path / "project")
    run = run_crawl(project, ["-a", f"base={site.base}"], env={"PYTHONPATH": str(blocker)})
    assert run.returncode == 1, run.log  # as for any refused setting
    assert len(run.error_records()) == 1, run.log
    assert (
        "CDP_POOL_BROWSER = 'lightpanda' (the default) cannot start: the "
        "lightpanda package is not installed. Install it with pip install "
        "'scrapy-cdp-pool[lightpanda]'"
    ) in run.log
    remedies = ("CDP_POOL_BROWSER = 'chromium'", "CDP_POOL_ENDPOINTS", "CDP_POOL_LIGHTPANDA_PATH")
    for remedy in remedies:
        assert remedy in run.log
    assert "ModuleNotFoundError" not in run.log  # the cause is said, not thrown
    assert "Spider opened" not in run.log  # refused before the engine started
    assert run.items == []
