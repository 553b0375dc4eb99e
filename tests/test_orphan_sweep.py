"""A browser server its crawl did not take down (the crawl SIGKILLed while
its browser started, before the browser asked to die with its parent: issue
39, an orphan Lightpanda ran 48 minutes) is ended by the next start's sweep
of the killed crawl's private directory: by the PID recorded there, only
when its start time and command line match and it runs as this user. Real
processes: a maker process SIGKILLed, the server it left in its own session."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.pool.private_dir import SERVER_RECORD, remove_stale_dirs
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.servers import ROOT

_MAKER = """
import subprocess, sys, time
from scrapy_cdp_pool.browser.pool.private_dir import make_private_dir, record_server
path = make_private_dir("lightpanda")
server = subprocess.Popen(["sleep", "600"], start_new_session=True)
record_server(path, server.pid)
print(path, server.pid, flush=True)
time.sleep(600)
"""


@pytest.fixture
def tmp() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="o", dir="/tmp"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _orphan(tmp: Path) -> tuple[Path, psutil.Process]:
    """A maker process that made a private directory in ``tmp`` and started
    a server in a session of its own, SIGKILLed: the server runs on."""
    maker = subprocess.Popen(
        [sys.executable, "-c", _MAKER], stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)},
    )  # fmt: skip
    assert maker.stdout is not None
    path, pid = maker.stdout.readline().split()
    maker.send_signal(signal.SIGKILL)
    maker.wait(10)
    maker.stdout.close()
    server = psutil.Process(int(pid))
    assert server.is_running()
    assert server.status() != psutil.STATUS_ZOMBIE
    return Path(path), server


def test_the_sweep_ends_a_killed_crawls_orphan_server_and_only_it(tmp: Path) -> None:
    """Before: the directory was removed and the server ran on."""
    path, server = _orphan(tmp)
    reused_path, other = _orphan(tmp)
    # the second one's record names a process started at another time (its
    # PID reused by another program): not ended
    record = json.loads((reused_path / SERVER_RECORD).read_text())
    record["start_time"] -= 3600
    (reused_path / SERVER_RECORD).write_text(json.dumps(record))
    try:
        removed = remove_stale_dirs(str(tmp))
        assert sorted(removed) == sorted([path, reused_path])
        psutil.wait_procs([server], timeout=10)
        assert not server.is_running()
        assert other.is_running()
    finally:
        for process in (server, other):
            if process.is_running():
                process.kill()


@pytest_twisted.ensureDeferred
async def test_an_embedded_server_is_recorded_in_its_private_directory() -> None:
    server = embedded_server(PoolConfig())
    await Deferred.fromFuture(asyncio.ensure_future(server.ensure_running()))
    try:
        assert server.private_dir is not None
        record = json.loads((server.private_dir / SERVER_RECORD).read_text())
        assert record["pid"] == server.pid
        assert record["cmdline"] == psutil.Process(server.pid).cmdline()
    finally:
        await Deferred.fromFuture(asyncio.ensure_future(server.stop()))
