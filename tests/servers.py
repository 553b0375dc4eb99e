"""Real servers the tests start on 127.0.0.1 and stop themselves: the test
site (``python -m tests.site``), an HTTP/2 one (``python -m tests.h2_site``),
a Lightpanda CDP server used as a remote endpoint, and a Chromium one. Each is
read from its own output or port, with a deadline."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from lightpanda.client import find_binary

from scrapy_cdp_pool.browser.pool.embedded_server import free_port

ROOT = Path(__file__).resolve().parent.parent
START_DEADLINE_S = 20.0


class _ModuleServer:
    """``python -m <args>`` in a subprocess that prints ``LISTENING <base URL>``
    once it serves; ``url(path)`` builds absolute URLs, ``stop()`` ends it."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = _readline_with_deadline(self.proc, START_DEADLINE_S)
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"python -m {args[0]} did not start: {line!r}")
        self.base = line.split()[1]

    def url(self, path: str) -> str:
        return self.base + path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class SiteServer(_ModuleServer):
    """The test site in a subprocess; ``url(path)`` builds absolute URLs.
    ``tls``: over HTTPS with a self-signed certificate; ``host``: another
    loopback address to listen on (a second machine's worth of address)."""

    def __init__(self, *, tls: bool = False, host: str = "127.0.0.1") -> None:
        super().__init__(["tests.site", "--host", host, *(["--tls"] if tls else [])])

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url("/stats"), timeout=10) as response:
            data: dict[str, Any] = json.loads(response.read())
            return data


class H2Site(_ModuleServer):
    """``python -m tests.h2_site`` in a subprocess: HTTPS on loopback, HTTP/2
    and HTTP/1.1, ``421`` to ``/misdirected*`` over HTTP/2 only."""

    def __init__(self) -> None:
        super().__init__(["tests.h2_site"])

    def served(self) -> dict[str, int]:
        """Requests served so far, ``{"h2 /path": n, "http/1.1 /path": n}``."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # its certificate is self-signed
        with urllib.request.urlopen(self.url("/stats"), timeout=10, context=context) as response:
            served: dict[str, int] = json.loads(response.read())
            return served


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


class ChromiumProcess:
    """Headless ``/usr/bin/chromium`` with ``--remote-debugging-port=0``, as a
    remote CDP endpoint: its ``ws://`` URL is read from the "DevTools listening
    on" line of its stderr, with a deadline; stopped by PID (its process group)."""

    def __init__(self, path: str = "/usr/bin/chromium") -> None:
        from scrapy_cdp_pool.browser.pool.server_flags import CHROMIUM_FLAGS

        self.user_data_dir = tempfile.mkdtemp(prefix="tests-chromium-")
        self.proc = subprocess.Popen(
            [path, *CHROMIUM_FLAGS, "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={self.user_data_dir}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        )  # fmt: skip
        # A thread reads stderr to its end (Chromium never blocks on a full
        # pipe) and hands over the DevTools URL; we wait for it with a deadline.
        urls: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read_stderr, args=(urls,), daemon=True)
        self._reader.start()
        try:
            self.endpoint = urls.get(timeout=START_DEADLINE_S)
        except queue.Empty:
            self.stop()
            raise RuntimeError("chromium did not print its DevTools URL in time") from None

    def _read_stderr(self, urls: queue.Queue[str]) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                urls.put(match.group(1))

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._reader.join(timeout=5)  # it ends at the pipe's end
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.user_data_dir, ignore_errors=True)


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


class ProxyServer:
    """``python -m tests.site.proxy NAME`` (a forward HTTP proxy that maps
    every host to 127.0.0.1 and tags requests ``X-Via-Proxy: NAME``); its
    ``FORWARDED``/``DENIED`` lines are kept in :attr:`log`."""

    def __init__(self, name: str, auth: str | None = None) -> None:
        argv = [sys.executable, "-m", "tests.site.proxy", name]
        if auth:
            argv += ["--auth", auth]
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        line = _readline_with_deadline(self.proc, START_DEADLINE_S)
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"proxy {name} did not start: {line!r}")
        self.url = line.split()[1]
        self.log: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.append(line.strip())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        if getattr(self, "_reader", None) is not None:
            self._reader.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
