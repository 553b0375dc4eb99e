"""Start and stop the processes a benchmark needs: the benchmark site, a Lightpanda
CDP server, a headless Chromium, and the runner subprocesses.

Every server listens on 127.0.0.1 only. Every wait has a deadline. `stop()` ends the
process it is given and the descendants it had (found by PID through psutil before the
SIGTERM), nothing else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil

# The embedded Chromium's own flags (headless, no background services), so the
# harness's Chromium is the plugin's: imported from the repository's package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scrapy_cdp_pool.browser.pool.server_flags import CHROMIUM_FLAGS

HOST = "127.0.0.1"
CHROMIUM = os.environ.get("BENCH_CHROMIUM", "/usr/bin/chromium")
#: Debian's chromium-headless-shell: the same engine without UI code
CHROMIUM_SHELL = os.environ.get("BENCH_CHROMIUM_SHELL", "/usr/lib/chromium/chromium-headless-shell")
DEVTOOLS_RE = re.compile(r"DevTools listening on (ws://\S+)")


class StartError(RuntimeError):
    """A server did not become ready before its deadline."""


@dataclass
class Managed:
    """A process this harness started, with what a client needs to reach it."""

    name: str
    popen: subprocess.Popen
    log_path: Path
    http_url: str = ""  # e.g. http://127.0.0.1:9333
    ws_url: str = ""  # the browser-level websocket URL, when there is one
    tmpdirs: list[Path] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, n_chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return ""


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def interrupt_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt, so the finally blocks stop what was started."""
    signal.signal(signal.SIGTERM, _interrupt)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 1.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def _wait_http(proc: Managed, url: str, deadline_s: float) -> bytes:
    end = time.monotonic() + deadline_s
    last: Exception | None = None
    while time.monotonic() < end:
        if proc.popen.poll() is not None:
            raise StartError(
                "%s exited with %s before it was ready: %s"
                % (proc.name, proc.popen.returncode, proc.log_tail(500))
            )
        try:
            return _get(url)
        except (OSError, urllib.error.URLError) as e:
            last = e
            time.sleep(0.05)
    raise StartError("%s not ready at %s after %.0f s: %s" % (proc.name, url, deadline_s, last))


def _spawn(
    name: str, argv: list[str], log_dir: Path, env: dict | None = None, cwd: str | None = None
) -> Managed:
    log_path = log_dir / ("%s-%d.log" % (name, time.monotonic_ns()))
    with open(log_path, "wb") as log:  # the child keeps its own copy of the descriptor
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    return Managed(name, popen, log_path)


def start_benchsite(script: Path, log_dir: Path, deadline_s: float = 30) -> Managed:
    port = free_port()
    proc = _spawn(
        "benchsite", [sys.executable, str(script), "--host", HOST, "--port", str(port)], log_dir
    )
    proc.http_url = "http://%s:%d" % (HOST, port)
    try:
        _wait_http(proc, proc.http_url + "/health", deadline_s)
    except BaseException:
        stop(proc)
        raise
    return proc


def warm_benchsite(site: Managed, paths: list[str], workers: int = 4) -> float:
    """Fetch each of ``paths`` (``/products?page=1``...) from the site once and
    return the seconds it took.

    The site builds each page once and keeps it (``functools.lru_cache`` in
    server.py): without this, the first configuration of run 1 pays for
    building every page (~1.4 ms of site CPU per page on /products, against
    0.4 once built), and on a CPU-bound box that is ~15% of its pages/s.

    :raises StartError: a page did not answer 200 within 30 s.
    """
    from concurrent.futures import ThreadPoolExecutor

    def fetch(path: str) -> None:
        url = site.http_url + path
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                r.read()
        except (OSError, urllib.error.URLError) as e:
            raise StartError("warming the site: %s: %s" % (url, e)) from e

    t0 = time.monotonic()
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(fetch, paths))
    return time.monotonic() - t0


def lightpanda_binary() -> str:
    from lightpanda.client import find_binary

    return str(find_binary())


def lightpanda_version() -> str:
    try:
        out = subprocess.run(
            [lightpanda_binary(), "version"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError, ImportError) as e:
        return "unknown (%s)" % e


def start_lightpanda(log_dir: Path, max_connections: int = 64, deadline_s: float = 20) -> Managed:
    port = free_port()
    env = dict(os.environ, LIGHTPANDA_DISABLE_TELEMETRY="true")
    argv = [
        lightpanda_binary(),
        "serve",
        "--host",
        HOST,
        "--port",
        str(port),
        "--cdp-max-connections",
        str(max_connections),
    ]
    proc = _spawn("lightpanda", argv, log_dir, env=env)
    proc.http_url = "http://%s:%d" % (HOST, port)
    try:
        info = json.loads(_wait_http(proc, proc.http_url + "/json/version", deadline_s))
        proc.ws_url = info.get("webSocketDebuggerUrl") or "ws://%s:%d/" % (HOST, port)
    except BaseException:
        stop(proc)
        raise
    return proc


def start_chromium(log_dir: Path, deadline_s: float = 30, binary: str = "") -> Managed:
    user_dir = Path(tempfile.mkdtemp(prefix="bench-chromium-"))
    argv = [
        binary or CHROMIUM,
        *CHROMIUM_FLAGS,
        "--remote-debugging-port=0",
        "--remote-debugging-address=%s" % HOST,
        "--user-data-dir=%s" % user_dir,
        "about:blank",
    ]
    proc = _spawn("chromium", argv, log_dir)
    proc.tmpdirs.append(user_dir)
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            m = DEVTOOLS_RE.search(proc.log_tail(100_000))
            if m:
                proc.ws_url = m.group(1)
                hostport = proc.ws_url.split("/")[2]
                proc.http_url = "http://" + hostport
                _wait_http(proc, proc.http_url + "/json/version", max(1.0, end - time.monotonic()))
                return proc
            if proc.popen.poll() is not None:
                raise StartError(
                    "chromium exited with %s: %s" % (proc.popen.returncode, proc.log_tail(500))
                )
            time.sleep(0.05)
        raise StartError(
            "no 'DevTools listening on' line from chromium after %.0f s: %s"
            % (deadline_s, proc.log_tail(500))
        )
    except BaseException:
        stop(proc)
        raise


def chromium_version() -> str:
    try:
        out = subprocess.run(
            [CHROMIUM, "--version"], capture_output=True, text=True, check=False, timeout=20
        )
        m = re.search(r"Chromium [\d.]+", out.stdout)
        return m.group(0) if m else out.stdout.strip()[:80]
    except (OSError, subprocess.SubprocessError) as e:
        return "unknown (%s)" % e


def tree_pids(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def stop(proc: Managed | None, grace_s: float = 10) -> None:
    """SIGTERM the process, wait, then SIGKILL what is left of the tree it had."""
    if proc is None:
        return
    procs: list[psutil.Process] = []
    if proc.popen.poll() is None:  # not reaped, so its PID is still its own
        procs = tree_pids(proc.pid)
        try:
            proc.popen.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        proc.popen.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    _, alive = psutil.wait_procs(procs, timeout=2)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
    if proc.popen.poll() is None:
        proc.popen.kill()
        proc.popen.wait(timeout=5)
    for d in proc.tmpdirs:
        shutil.rmtree(d, ignore_errors=True)
