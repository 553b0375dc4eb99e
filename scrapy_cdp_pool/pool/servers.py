"""Embedded CDP servers: the Lightpanda binary of the ``lightpanda`` wheel, or a
local Chromium. Start, wait until ready (with a deadline), stop, restart.

Both listen on 127.0.0.1 only. Each runs in its own process group, so the whole
tree (Chromium is a dozen processes) is stopped with its leader, and on Linux
the leader is sent SIGTERM if the crawler process dies first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import logging
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.pool.heap_limit import heap_limit_args, note_stderr_line
from scrapy_cdp_pool.pool.server_options import ServerOptions

logger = logging.getLogger(__name__)

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    # What browser automation passes (Playwright's defaults): no throttling of
    # pages that are never visible, no extensions or background features.
    "--disable-extensions",
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-ipc-flooding-protection",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--password-store=basic",
    # BackForwardCache: a page kept for reuse goes to about:blank between
    # requests; the back-forward cache would keep each previous document alive.
    "--disable-features=Translate,OptimizationHints,MediaRouter,PaintHolding,BackForwardCache",
)
_DEVTOOLS_LINE = re.compile(rb"DevTools listening on (ws://\S+)")


class ServerStartError(RuntimeError):
    """The embedded server did not start or did not get ready in time."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    os.setsid()
    if sys.platform == "linux":
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bind to 0, read, release)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedServer(ABC):
    """A CDP server process this crawler owns.

    :attr:`endpoint` is the ``http://127.0.0.1:<port>`` root (Lightpanda) or the
    ``ws://`` browser URL (Chromium) of the running process; it changes when the
    server is restarted.
    """

    kind: str

    def __init__(self, config: PoolConfig) -> None:
        self.config = config
        self.endpoint: str | None = None
        self.restarts = 0
        #: what it is for, in logs (a dedicated server's proxy or time zone)
        self.purpose = ""
        #: environment variables added to the process's (a dedicated server's proxy)
        self.extra_env: dict[str, str] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._stopping = False

    @property
    def pid(self) -> int | None:
        """PID of the server's leader process, while it runs."""
        return self._proc.pid if self.running and self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def ensure_running(self) -> str:
        """Start the server if it is not running (first start, or it died) and
        return its endpoint.

        :raises ServerStartError: the binary is missing, exits, or is not ready
            within ``CDP_POOL_SERVER_START_TIMEOUT_SECONDS``.
        """
        async with self._lock:
            if self.running and self.endpoint:
                return self.endpoint
            if self._proc is not None:
                self.restarts += 1
                logger.warning(
                    "The embedded %s server%s (pid %s) exited with code %s; restarting it",
                    self.kind, f" {self.purpose}" if self.purpose else "", self._proc.pid,
                    self._proc.returncode,
                )  # fmt: skip
                await self._cleanup()
            self._stopping = False
            try:
                async with asyncio.timeout(self.config.server_start_timeout_s):
                    self.endpoint = await self._start()
            except TimeoutError as e:
                await self._kill()
                raise ServerStartError(
                    f"the embedded {self.kind} server was not ready within "
                    f"{self.config.server_start_timeout_s:.0f} s "
                    "(CDP_POOL_SERVER_START_TIMEOUT_SECONDS)"
                ) from e
            except BaseException:
                await self._kill()
                raise
            return self.endpoint

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop the server and its process tree (SIGTERM, then SIGKILL after
        ``grace_s`` seconds). Idempotent."""
        async with self._lock:
            self._stopping = True
            await self._kill(grace_s)
            await self._cleanup()

    async def _spawn(self, argv: list[str]) -> asyncio.subprocess.Process:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                preexec_fn=_die_with_parent,
                env={**os.environ, **self.extra_env} if self.extra_env else None,
            )
        except OSError as e:
            raise ServerStartError(f"cannot start {argv[0]}: {e}") from e
        self._drain = asyncio.get_running_loop().create_task(
            self._drain_stderr(self._proc), name=f"cdp-pool {self.kind} stderr"
        )
        return self._proc

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        """Read the server's stderr so it never blocks on a full pipe; keep the
        last lines for error messages."""
        self._stderr_tail: list[bytes] = []
        if proc.stderr is None:
            return
        async for line in proc.stderr:
            self._on_stderr_line(line)
            self._stderr_tail = [*self._stderr_tail[-19:], line]

    def _on_stderr_line(self, line: bytes) -> None:  # noqa: B027 - optional hook
        """Hook for servers that announce readiness on stderr."""

    def stderr_tail(self) -> str:
        lines = getattr(self, "_stderr_tail", [])
        return b"".join(lines).decode("utf-8", "replace").strip()[-2000:]

    async def _kill(self, grace_s: float = 5.0) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(grace_s):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()

    async def _cleanup(self) -> None:
        """Reap the process group's leftovers and drop per-run state."""
        proc, self._proc = self._proc, None
        self.endpoint = None
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # children left behind by a crash
        drain = getattr(self, "_drain", None)
        if drain is not None:
            drain.cancel()
            await asyncio.gather(drain, return_exceptions=True)

    @abstractmethod
    def checked_binary(self) -> str:
        """The server binary's path.

        :raises ServerStartError: it is missing, naming the setting."""

    @abstractmethod
    async def _start(self) -> str:
        """Spawn the process, wait until it serves CDP, return the endpoint."""


def watchdog_ms(config: PoolConfig) -> int:
    """Lightpanda's ``--watchdog-ms``: half of ``DOWNLOAD_TIMEOUT``, at most its
    own default of 30 s, at least 0.5 s. The watchdog ends a page stuck in
    JavaScript (and closes its connection); a CDP timeout alone stops waiting
    but leaves the server's thread spinning."""
    return int(1000 * max(0.5, min(30.0, config.download_timeout_s / 2)))


class LightpandaServer(EmbeddedServer):
    """``lightpanda serve`` from the ``lightpanda`` wheel (or
    ``CDP_POOL_LIGHTPANDA_PATH``), with ``--cdp-max-connections`` at least the
    pool's connections (Lightpanda answers HTTP 503 past it), and
    ``--watchdog-ms`` below ``DOWNLOAD_TIMEOUT`` (:func:`watchdog_ms`) unless
    ``CDP_POOL_LIGHTPANDA_ARGS`` sets it."""

    kind = "lightpanda"

    def _on_stderr_line(self, line: bytes) -> None:
        note_stderr_line(line)  # a page over CDP_POOL_PAGE_HEAP_LIMIT_MB

    def binary(self) -> str:
        if self.config.lightpanda_path:
            return self.config.lightpanda_path
        from lightpanda.client import find_binary  # the wheel's own lookup

        return str(find_binary())

    def checked_binary(self) -> str:
        """The binary's path.

        :raises ServerStartError: it is not a file."""
        binary = self.binary()
        if not Path(binary).is_file():
            raise ServerStartError(
                f"CDP_POOL_LIGHTPANDA_PATH: {binary!r} is not a file "
                "(pip install lightpanda ships the binary)"
            )
        return binary

    async def _start(self) -> str:
        binary = self.checked_binary()
        port = free_port()
        max_connections = max(16, self.config.connections * 2)
        watchdog = ["--watchdog-ms", str(watchdog_ms(self.config))]
        if any(arg.startswith("--watchdog-ms") for arg in self.config.lightpanda_args):
            watchdog = []
        argv = [
            binary, "serve", "--host", "127.0.0.1", "--port", str(port),
            "--cdp-max-connections", str(max_connections),
            "--log-level", "error", *watchdog,
            *heap_limit_args(self.config, "lightpanda"),
            *self.config.lightpanda_args,
        ]  # fmt: skip
        proc = await self._spawn(argv)
        endpoint = f"http://127.0.0.1:{port}"
        delay = 0.01
        while True:  # no readiness line to read: connect until it accepts
            if proc.returncode is not None:
                raise ServerStartError(
                    f"lightpanda exited with code {proc.returncode} at start: {self.stderr_tail()}"
                )
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.2)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            logger.debug("lightpanda pid %s serves CDP at %s", proc.pid, endpoint)
            return endpoint


class ChromiumServer(EmbeddedServer):
    """A local Chromium (``CDP_POOL_CHROMIUM_PATH``) with
    ``--remote-debugging-port=0``, headless flags and a temporary
    ``--user-data-dir`` removed at stop; ready when it prints its
    ``DevTools listening on ws://...`` line."""

    kind = "chromium"

    def __init__(self, config: PoolConfig) -> None:
        super().__init__(config)
        self._user_data_dir: str | None = None
        self._ws_url: asyncio.Future[str] | None = None

    def _on_stderr_line(self, line: bytes) -> None:
        match = _DEVTOOLS_LINE.search(line)
        if match and self._ws_url is not None and not self._ws_url.done():
            self._ws_url.set_result(match.group(1).decode())

    def checked_binary(self) -> str:
        """The binary's path.

        :raises ServerStartError: it is not an executable file."""
        path = self.config.chromium_path
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise ServerStartError(
                f"CDP_POOL_CHROMIUM_PATH: {path!r} is not an executable "
                "(on Debian: apt-get install chromium)"
            )
        return path

    async def _start(self) -> str:
        path = self.checked_binary()
        self._user_data_dir = tempfile.mkdtemp(prefix="cdp-pool-chromium-")
        self._ws_url = asyncio.get_running_loop().create_future()
        extra: list[str] = []
        if "image" in self.config.block_resources:
            # Not even requested: cheaper than intercepting each image (they are
            # then not counted in cdp_pool/resources_blocked).
            extra.append("--blink-settings=imagesEnabled=false")
        argv = [
            path, *CHROMIUM_FLAGS, *extra, *heap_limit_args(self.config, "chromium"),
            *self.config.chromium_args,
            "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
            f"--user-data-dir={self._user_data_dir}", "about:blank",
        ]  # fmt: skip
        proc = await self._spawn(argv)
        exited: asyncio.Future[int] = asyncio.ensure_future(proc.wait())
        waited: set[asyncio.Future[Any]] = {self._ws_url, exited}
        try:
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
        if self._ws_url.done():
            ws_url = self._ws_url.result()
            logger.debug("chromium pid %s serves CDP at %s", proc.pid, ws_url)
            return ws_url
        raise ServerStartError(
            f"chromium exited with code {proc.returncode} at start: {self.stderr_tail()}"
        )

    async def _cleanup(self) -> None:
        await super()._cleanup()
        if self._ws_url is not None and not self._ws_url.done():
            self._ws_url.cancel()
        if self._user_data_dir:
            shutil.rmtree(self._user_data_dir, ignore_errors=True)
            self._user_data_dir = None


def embedded_server(
    config: PoolConfig, dedicated_to: ServerOptions | None = None
) -> EmbeddedServer:
    """The server ``CDP_POOL_BROWSER`` names; with ``dedicated_to``, a
    Lightpanda server started with those options (a profile's time zone in
    its arguments, its proxy in its environment: see
    :mod:`~scrapy_cdp_pool.pool.server_options`), whatever the browser."""
    if dedicated_to is not None:
        config = dataclasses.replace(
            config,
            browser="lightpanda",
            lightpanda_args=(*config.lightpanda_args, *dedicated_to.lightpanda_args()),
        )
        server = LightpandaServer(config)
        server.purpose = f"for {dedicated_to.label}"
        server.extra_env = dedicated_to.lightpanda_env()
        return server
    if config.browser == "chromium":
        return ChromiumServer(config)
    return LightpandaServer(config)
