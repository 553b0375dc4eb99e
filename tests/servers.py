"""Real servers the tests start on 127.0.0.1 and stop themselves: the test
site (``python -m tests.site``) and a Lightpanda CDP server used as a remote
endpoint. Each is read from its own output or port, with a deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from lightpanda.client import find_binary

from scrapy_cdp_pool.pool.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
START_DEADLINE_S = 20.0


class SiteServer:
    """The test site in a subprocess; ``url(path)`` builds absolute URLs."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.site"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = _readline_with_deadline(self.proc, START_DEADLINE_S)
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"test site did not start: {line!r}")
        self.base = line.split()[1]

    def url(self, path: str) -> str:
        return self.base + path

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url("/stats"), timeout=10) as response:
            data: dict[str, Any] = json.loads(response.read())
            return data

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class LightpandaProcess:
    """``lightpanda serve`` on a free port, as a remote CDP endpoint."""

    def __init__(self, max_connections: int = 16) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [str(find_binary()), "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--cdp-max-connections", str(max_connections), "--log-level", "error"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.endpoint = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/json/version", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("lightpanda did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _readline_with_deadline(proc: subprocess.Popen[str], deadline_s: float) -> str:
    import selectors

    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not selector.select(timeout=deadline_s):
            raise RuntimeError(f"no output from {proc.args!r} within {deadline_s} s")
        return proc.stdout.readline().strip()
    finally:
        selector.close()


def process_tree_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
