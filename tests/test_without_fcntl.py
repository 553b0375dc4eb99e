"""Issue 40, item 1: the package imports, and a Chromium crawl runs, where
``fcntl`` does not exist (Windows). ``fcntl`` is put out of reach by a
``sitecustomize`` on ``PYTHONPATH`` (:func:`tests.scrapy_command.write_blocker`)
in a real ``python`` and ``scrapy crawl`` subprocess, with this checkout first
on ``PYTHONPATH`` (the code under test, whichever checkout the venv's editable
install points at). Twisted and Scrapy import without it on Linux too.

What it shows: no module of the package imports ``fcntl`` at import time, and
the embedded Chromium's pipe is set up without it. The JOBDIR lock's Windows
path (``msvcrt.locking``) cannot run here. Embedded servers are refused at
start on Windows (checked with the add-on told it runs there).
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon, addon
from tests.scrapy_command import run_crawl, write_blocker, write_project
from tests.servers import ROOT, SiteServer

EVERY_MODULE = """
import importlib, pkgutil, sys
import scrapy_cdp_pool
assert scrapy_cdp_pool.__file__.startswith(sys.argv[1]), scrapy_cdp_pool.__file__
for module in pkgutil.walk_packages(scrapy_cdp_pool.__path__, "scrapy_cdp_pool."):
    importlib.import_module(module.name)
import scrapy_cdp_pool.addon
assert "fcntl" not in sys.modules
print("imported")
"""


def _path(blocker: Path) -> str:
    return os.pathsep.join([str(blocker), str(ROOT)])


def test_the_blocker_makes_import_fcntl_fail(tmp_path: Path) -> None:
    blocker = write_blocker(tmp_path / "blocker", "fcntl")
    result = subprocess.run(
        [sys.executable, "-c", "import fcntl"], env={"PYTHONPATH": str(blocker)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "ModuleNotFoundError: No module named 'fcntl'" in result.stderr


def test_every_module_imports_without_fcntl(tmp_path: Path) -> None:
    blocker = write_blocker(tmp_path / "blocker", "fcntl")
    result = subprocess.run(
        [sys.executable, "-c", EVERY_MODULE, str(ROOT)], env={"PYTHONPATH": _path(blocker)},
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "imported", result.stdout + result.stderr


#: ``import fcntl`` fails in the package's modules only (Twisted's reactor
#: needs it on POSIX; on Windows it uses other means): every ``import fcntl``
#: statement of the package, at module level or in a function, goes through
#: ``builtins.__import__`` with the importing module's globals
PACKAGE_BLOCKER = """
import builtins

_import = builtins.__import__


def _no_fcntl_in_the_package(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if name == "fcntl" and importer.split(".")[0] == "scrapy_cdp_pool":
        raise ModuleNotFoundError("No module named 'fcntl'", name=name)
    return _import(name, globals, locals, fromlist, level)


builtins.__import__ = _no_fcntl_in_the_package
"""


@pytest.mark.parametrize("reactor", [False, True], ids=["reactorless", "asyncio reactor"])
def test_a_chromium_crawl_runs_without_fcntl(
    site: SiteServer, tmp_path: Path, reactor: bool
) -> None:
    """Reactorless (Scrapy's asyncio loop alone): ``fcntl`` is absent from
    the whole process. With Twisted's asyncio reactor: absent for the
    package's modules (Twisted's POSIX waker needs it here)."""
    if reactor:
        blocker = tmp_path / "blocker"
        blocker.mkdir()
        (blocker / "sitecustomize.py").write_text(PACKAGE_BLOCKER)
    else:
        blocker = write_blocker(tmp_path / "blocker", "fcntl")
    project = write_project(
        tmp_path / "project",
        f'CDP_POOL_BROWSER = "chromium"\nTWISTED_REACTOR_ENABLED = {reactor}\n',
    )
    run = run_crawl(project, ["-a", f"base={site.base}"], env={"PYTHONPATH": _path(blocker)})
    assert run.returncode == 0, run.log
    assert run.error_records() == [], run.log
    assert "fcntl" not in run.log, run.log
    rendered = {item["url"].rsplit("=", 1)[1]: item["rendered"] for item in run.items}
    assert rendered == {"3": True, "4": False}, run.log


def test_embedded_servers_are_refused_at_start_on_windows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On Windows a subprocess takes no ``preexec_fn`` nor ``pass_fds``: an
    embedded server is refused at start, naming what works there (only the
    add-on's view of the platform is changed)."""
    monkeypatch.setattr(addon, "sys", types.SimpleNamespace(platform="win32"))
    with pytest.raises(ValueError, match="need a POSIX system") as refused:
        Addon().update_settings(Settings({"CDP_POOL_BROWSER": "chromium"}))
    assert "CDP_POOL_ENDPOINTS" in str(refused.value)
    assert "--remote-debugging-port" in str(refused.value)
    remote = Settings({"CDP_POOL_ENDPOINTS": ["http://127.0.0.1:9222"]})
    Addon().update_settings(remote)  # remote endpoints: accepted
