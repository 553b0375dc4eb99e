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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.pool.private_dir import SERVER_RECORD, remove_stale_dirs
from scrapy_cdp_pool.browser.pool.process_start import (
    WALL_CLOCK_TOLERANCE_S,
    same_start,
    start_mark,
)
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


def _edit_record(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    record = json.loads((path / SERVER_RECORD).read_text())
    edit(record)
    (path / SERVER_RECORD).write_text(json.dumps(record))


def _clock_stepped(record: dict[str, Any]) -> None:
    """What the record's wall-clock start reads as after the clock moved
    1.5 s: psutil's create_time of the same process then differs as much."""
    record["start_time"] -= 1.5


def _another_start(record: dict[str, Any]) -> None:
    """A record naming a process started at another time: its PID reused."""
    record["start_time"] -= 3600
    mark = record["start_mark"]
    record["start_mark"] = f"{mark}0" if isinstance(mark, str) else mark - 3600


def test_the_sweep_ends_a_killed_crawls_orphan_server_and_only_it(tmp: Path) -> None:
    """Before: the directory was removed and the server ran on. The first
    orphan's recorded wall-clock start is 1.5 s off (the clock moved since
    it was written: on Linux psutil adds ``/proc/stat``'s btime, which moves
    with it), so it is known by its start mark alone: before, the sweep
    compared wall-clock times within 1 s and left it running (seen in CI)."""
    path, server = _orphan(tmp)
    reused_path, other = _orphan(tmp)
    _edit_record(path, _clock_stepped)
    _edit_record(reused_path, _another_start)
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


def _no_mark(record: dict[str, Any]) -> None:
    """A record whose start mark could not be read when it was written."""
    record["start_mark"] = None


def test_a_record_without_a_start_mark_is_known_by_its_wall_clock_start(tmp: Path) -> None:
    """A record written by an earlier version, or whose mark could not be
    read (``null``): compared by its wall-clock start, as before the marks
    (before this mend a ``null`` mark never matched, and the orphan ran on)."""
    path, server = _orphan(tmp)
    _edit_record(path, _no_mark)
    try:
        assert remove_stale_dirs(str(tmp)) == [path]
        psutil.wait_procs([server], timeout=10)
        assert not server.is_running()
    finally:
        if server.is_running():
            server.kill()


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


def test_a_start_mark_reads_past_a_command_name_with_parentheses(tmp: Path) -> None:
    """``/proc/<pid>/stat``'s second field is the command name in
    parentheses, which may hold ``) (`` itself: the mark is read after the
    last one, and stays the same read after read."""
    program = tmp / "a) b ("
    shutil.copy(shutil.which("sleep") or "/bin/sleep", program)
    process = subprocess.Popen([str(program), "600"])
    try:
        mark = start_mark(process.pid)
        assert mark is not None
        assert same_start(mark, start_mark(process.pid))
        assert not same_start(mark, start_mark(os.getpid()))
        if sys.platform.startswith("linux"):
            assert isinstance(mark, str)
            ticks = int(mark.rsplit(":", 1)[1])
            # the same count psutil adds to the boot time (a whole second,
            # which may move by one between the two reads)
            since_boot = ticks / os.sysconf("SC_CLK_TCK")
            created = psutil.Process(process.pid).create_time()
            assert abs(psutil.boot_time() + since_boot - created) < WALL_CLOCK_TOLERANCE_S
    finally:
        process.kill()
        process.wait(10)
    assert start_mark(process.pid) is None


def test_marks_of_different_kinds_are_not_the_same() -> None:
    assert same_start(12.0, 12.5)
    # one process's start read as psutil gives it, before and after ``btime``
    # (/proc/stat) moved by its whole second: seen in CI within one test, when
    # the tolerance was 1 s and the orphan of a record without a mark ran on
    assert same_start(1765000000.25, 1765000001.25)
    assert not same_start(12.0, 12.0 + WALL_CLOCK_TOLERANCE_S)
    assert not same_start("boot:12", 12.0)
    assert not same_start(None, None)
