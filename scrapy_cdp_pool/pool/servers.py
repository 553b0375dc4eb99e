"""Embedded CDP servers: the Lightpanda binary of the ``lightpanda`` wheel, or a
local Chromium. Start, wait until ready (with a deadline), stop, restart.

Neither listens on a network port: Lightpanda serves CDP on a Unix socket
(``serve --unix-socket``, mode 0600) in a private directory (mode 0700, see
:mod:`~scrapy_cdp_pool.pool.private_dir`), Chromium over a pipe
(``--remote-debugging-pipe``): no other local user can open a CDP session on
them. Neither phones home: Lightpanda runs with
``LIGHTPANDA_DISABLE_TELEMETRY=true``, Chromium with its background services
switched off (:data:`CHROMIUM_FLAGS`). Each runs in its own process group, so
the whole tree (Chromium is a dozen processes) is stopped with its leader, and
on Linux the leader is sent SIGTERM if the crawler process dies first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import fcntl
import logging
import os
import shutil
import signal
import socket
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy_cdp_pool.backends import CHROMIUM, LIGHTPANDA, Backend, backend_of, sets_flag
from scrapy_cdp_pool.cdp import CDPConnectError, CDPConnection, CDPError
from scrapy_cdp_pool.cdp.transport import unix_socket_url
from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.errors import ServerStartError
from scrapy_cdp_pool.pool.capabilities import ServerInfo, discover, info_from_browser_version
from scrapy_cdp_pool.pool.heap_limit import heap_limit_args, note_stderr_line
from scrapy_cdp_pool.pool.private_dir import make_private_dir, sweep_once
from scrapy_cdp_pool.pool.server_flags import (
    chromium_flags,
    http_cache_args,
    lightpanda_flags,
    watchdog_ms,
)
from scrapy_cdp_pool.pool.server_options import ServerOptions

logger = logging.getLogger(__name__)

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # No connection the pages did not cause: no background services (update,
    # sync, safe browsing lists, field trials, domain reliability reports,
    # hyperlink pings), no crash reports (no dumps under $HOME either).
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-field-trial-config",
    "--disable-default-apps",
    "--disable-component-extensions-with-background-pages",
    "--disable-search-engine-choice-screen",
    "--no-service-autorun",
    "--no-pings",
    "--safebrowsing-disable-auto-update",
    "--disable-breakpad",
    "--disable-crash-reporter",
    # Measured with strace on Chromium 156, the flags above still left DNS
    # look-ups of accounts.google.com (its account list, at start),
    # update.googleapis.com (component updates) and clients2.google.com
    # (network time, off below: NetworkTimeServiceQuerying). The first two are
    # pointed at port 1, which Chromium refuses (ERR_UNSAFE_PORT) before any
    # connection is attempted.
    "--gaia-url=http://127.0.0.1:1/",
    "--component-updater=url-source=http://127.0.0.1:1/",
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
    # One --disable-features only: Chromium reads the last one it is given.
    # BackForwardCache: a page kept for reuse goes to about:blank between
    # requests; the back-forward cache would keep each previous document alive.
    # SpareRendererForSitePerProcess: Chromium keeps one pre-started renderer
    # for the browser context that navigated last; with one context per pooled
    # connection each navigation found a spare made for another context, threw
    # it away and started a new one (52-68 renderer processes started for 40
    # pages on 4 connections, 0-6 without; the browser's CPU, exited renderers
    # included, 565-612 -> 437 ms/page).
    (
        "--disable-features=Translate,OptimizationHints,OptimizationHintsFetching,"
        "OptimizationGuideModelDownloading,OptimizationTargetPrediction,MediaRouter,"
        "DialMediaRouteProvider,PaintHolding,AutofillServerCommunication,"
        "CertificateTransparencyComponentUpdater,SafeBrowsingOnDemand,"
        "InterestFeedContentSuggestions,LensOverlay,GlobalMediaControls,NetworkTimeServiceQuerying,"
        "BackForwardCache,SpareRendererForSitePerProcess"
    ),
)

#: Lightpanda reads it at start (``strings`` on 1.0.2 shows it): without it,
#: every server looks up and calls its vendor's telemetry host
LIGHTPANDA_ENV = {"LIGHTPANDA_DISABLE_TELEMETRY": "true"}


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    os.setsid()
    if sys.platform == "linux":
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


_XDG = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")

#: the longest path of a Unix socket (``sun_path`` is 108 bytes on Linux)
MAX_SOCKET_PATH = 107


def private_env(private_dir: Path) -> dict[str, str]:
    """The crawler's environment with ``TMPDIR`` and the XDG base
    directories in ``private_dir`` (Chromium's ``org.chromium.Chromium.*``
    files and its crash database, otherwise in /tmp and ~/.config/chromium;
    Lightpanda's ~/.local/share/lightpanda): all removed with it."""
    env = {**os.environ}
    for name in ("TMPDIR", *_XDG):
        # Short names: Chromium's singleton socket goes in TMPDIR
        folder = private_dir / name.removeprefix("XDG_").removesuffix("_HOME").lower()
        folder.mkdir(mode=0o700, exist_ok=True)
        env[name] = str(folder)
    return env


def _child_setup(pipe_fds: tuple[int, int] | None) -> Callable[[], None]:
    def setup() -> None:  # pragma: no cover - runs in the child
        _die_with_parent()
        if pipe_fds is not None:
            # Chromium's --remote-debugging-pipe: it reads fd 3, writes fd 4.
            # Moved out of the way first, in case either already is 3 or 4.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in pipe_fds]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

    return setup


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bind to 0, read, release)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedServer(ABC):
    """A CDP server process this crawler owns.

    :attr:`endpoint` names the running process's channel: the
    ``ws+unix:///<private dir>/cdp.sock:/`` socket (Lightpanda) or
    ``pipe:chromium/<pid>`` (Chromium); it changes when the server is
    restarted. :attr:`private_dir` is the server's own directory (mode 0700),
    removed at stop.
    """

    backend: Backend

    @property
    def kind(self) -> str:
        """The backend's name, for logs and stats."""
        return self.backend.kind

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
        self.private_dir: Path | None = None

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
                how = (
                    f"exited with code {self._proc.returncode}"
                    if self._proc.returncode is not None
                    else "closed its channel"
                )
                logger.warning(
                    "The embedded %s server%s (pid %s) %s; restarting it",
                    self.kind,
                    f" {self.purpose}" if self.purpose else "",
                    self._proc.pid,
                    how,
                )
                await self._kill(1.0)
                await self._cleanup()
            self._stopping = False
            sweep_once()
            self.private_dir = make_private_dir(self.kind)
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

    def _dir(self) -> Path:
        if self.private_dir is None:
            raise RuntimeError("the server's private directory is made by ensure_running()")
        return self.private_dir

    def _env(self) -> dict[str, str]:
        """The process's environment: :func:`private_env` and :attr:`extra_env`."""
        return {**private_env(self._dir()), **self.extra_env}

    async def _spawn(
        self, argv: list[str], pipe_fds: tuple[int, int] | None = None
    ) -> asyncio.subprocess.Process:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                preexec_fn=_child_setup(pipe_fds),
                pass_fds=(3, 4) if pipe_fds is not None else (),
                env=self._env(),
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
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)
            self.private_dir = None

    #: whether every connection to it is one shared channel (:meth:`connect`)
    shared_channel = False

    async def server_info(self, timeout_s: float) -> ServerInfo:
        """What the running server is (see :func:`discover`).

        :raises OSError: it does not answer within ``timeout_s`` seconds."""
        return await discover(self.endpoint or "", timeout_s)

    async def connect(self, info: ServerInfo, timeout_s: float) -> CDPConnection:
        """A CDP connection to the running server (:attr:`shared_channel`:
        the same one each time; closing it stops the server).

        :raises CDPConnectError: it does not accept one within ``timeout_s``."""
        return await CDPConnection.open(
            info.ws_url,
            open_timeout_s=timeout_s,
            command_timeout_s=self.config.command_timeout_s,
            max_message_bytes=self.config.max_message_bytes,
        )

    @abstractmethod
    def checked_binary(self) -> str:
        """The server binary's path.

        :raises ServerStartError: it is missing, naming the setting."""

    @abstractmethod
    async def _start(self) -> str:
        """Spawn the process, wait until it serves CDP, return the endpoint."""


class LightpandaServer(EmbeddedServer):
    """``lightpanda serve`` from the ``lightpanda`` wheel (or
    ``CDP_POOL_LIGHTPANDA_PATH``) on a Unix socket in its private directory,
    with telemetry off (:data:`LIGHTPANDA_ENV`), ``--cdp-max-connections`` at least the
    pool's connections (Lightpanda answers HTTP 503 past it), and
    ``--watchdog-ms`` below ``DOWNLOAD_TIMEOUT`` (:func:`watchdog_ms`) unless
    ``CDP_POOL_LIGHTPANDA_ARGS`` sets it."""

    backend = LIGHTPANDA

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

    def _env(self) -> dict[str, str]:
        return {**super()._env(), **LIGHTPANDA_ENV}

    async def server_info(self, timeout_s: float) -> ServerInfo:
        info = await super().server_info(timeout_s)
        cached = self.config.http_cache or sets_flag(
            self.config.lightpanda_args, "--http-cache-dir"
        )
        return dataclasses.replace(info, cache_ignores_cookies=cached)

    async def _start(self) -> str:
        binary = self.checked_binary()
        path = str(self._dir() / "cdp.sock")
        if len(path.encode()) > MAX_SOCKET_PATH:
            raise ServerStartError(
                f"the server's socket path {path!r} is longer than a Unix socket's "
                f"{MAX_SOCKET_PATH} bytes: set TMPDIR to a shorter directory"
            )
        max_connections = max(16, self.config.connections * 2)
        watchdog = ["--watchdog-ms", str(watchdog_ms(self.config))]
        if sets_flag(self.config.lightpanda_args, "--watchdog-ms"):
            watchdog = []
        argv = [
            binary,
            "serve",
            "--unix-socket",
            path,
            "--cdp-max-connections",
            str(max_connections),
            "--log-level",
            "error",
            *watchdog,
            *lightpanda_flags(self.config),
            *heap_limit_args(self.config, LIGHTPANDA),
            *http_cache_args(self.config, self._dir()),
            *self.config.lightpanda_args,
        ]
        proc = await self._spawn(argv)
        endpoint = unix_socket_url(path)
        delay = 0.01
        while True:  # no readiness line to read: connect until it accepts
            if proc.returncode is not None:
                raise ServerStartError(
                    f"lightpanda exited with code {proc.returncode} at start: {self.stderr_tail()}"
                )
            try:
                _, writer = await asyncio.open_unix_connection(path)
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
    ``--remote-debugging-pipe`` (no port), headless and quiet flags
    (:data:`CHROMIUM_FLAGS`), its ``--user-data-dir``, crash directory and
    ``TMPDIR`` in its private directory. Ready when it answers
    ``Browser.getVersion`` over the pipe.

    The pipe is one CDP connection, :attr:`cdp`, shared by the pool's
    connections (commands have distinct ids, events are routed by session);
    closing it makes Chromium exit, and :meth:`ensure_running` starts a new
    one."""

    backend = CHROMIUM

    def __init__(self, config: PoolConfig) -> None:
        super().__init__(config)
        #: the CDP connection over the pipe, while the browser runs
        self.cdp: CDPConnection | None = None
        #: its ``Browser.getVersion`` answer
        self.version: dict[str, Any] = {}

    shared_channel = True

    @property
    def running(self) -> bool:
        return super().running and self.cdp is not None and not self.cdp.closed

    async def server_info(self, timeout_s: float) -> ServerInfo:
        return info_from_browser_version(self.endpoint or "", self.version)

    async def connect(self, info: ServerInfo, timeout_s: float) -> CDPConnection:
        if self.cdp is None or self.cdp.closed:
            raise CDPConnectError(f"{self.endpoint}: the browser's pipe is closed")
        return self.cdp

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
        private = self._dir()
        extra: list[str] = []
        if "image" in self.config.block_resources:
            # Not even requested: cheaper than intercepting each image (they are
            # then not counted in cdp_pool/resources_blocked).
            extra.append("--blink-settings=imagesEnabled=false")
        argv = [
            path,
            *CHROMIUM_FLAGS,
            *extra,
            *chromium_flags(self.config),
            *heap_limit_args(self.config, CHROMIUM),
            *self.config.chromium_args,
            "--remote-debugging-pipe",
            f"--user-data-dir={private / 'profile'}",
            f"--crash-dumps-dir={private / 'crashes'}",
            "about:blank",
        ]
        to_browser = os.pipe()  # (read: its fd 3, write: ours)
        from_browser = os.pipe()  # (read: ours, write: its fd 4)
        try:
            proc = await self._spawn(argv, pipe_fds=(to_browser[0], from_browser[1]))
        except BaseException:
            for fd in (*to_browser, *from_browser):
                os.close(fd)
            raise
        os.close(to_browser[0])
        os.close(from_browser[1])
        name = f"pipe:chromium/{proc.pid}"
        self.cdp = await CDPConnection.open_pipe(
            name,
            to_browser[1],
            from_browser[0],
            command_timeout_s=self.config.command_timeout_s,
            max_message_bytes=self.config.max_message_bytes,
        )
        exited: asyncio.Future[int] = asyncio.ensure_future(proc.wait())
        answer = asyncio.ensure_future(self.cdp.send("Browser.getVersion", timeout_s=3600))
        waited: set[asyncio.Future[Any]] = {answer, exited}
        try:
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            answer.cancel()
        if answer.done() and not answer.cancelled() and answer.exception() is None:
            self.version = answer.result()
            logger.debug("chromium pid %s serves CDP over its pipe", proc.pid)
            return name
        error = answer.exception() if answer.done() and not answer.cancelled() else None
        if isinstance(error, CDPError) and proc.returncode is None:
            raise ServerStartError(
                f"chromium did not answer over its pipe: {error}: {self.stderr_tail()}"
            )
        raise ServerStartError(
            f"chromium exited with code {proc.returncode} at start: {self.stderr_tail()}"
        )

    async def _kill(self, grace_s: float = 5.0) -> None:
        # Closing the pipe is Chromium's own way out: it exits at once.
        if self.cdp is not None:
            await self.cdp.close()
        await super()._kill(grace_s)

    async def _cleanup(self) -> None:
        cdp, self.cdp = self.cdp, None
        if cdp is not None:
            await cdp.close()
        self.version = {}
        await super()._cleanup()


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
            browser=LIGHTPANDA.kind,
            lightpanda_args=(*config.lightpanda_args, *dedicated_to.lightpanda_args()),
        )
        server = LightpandaServer(config)
        server.purpose = f"for {dedicated_to.label}"
        server.extra_env = dedicated_to.lightpanda_env()
        return server
    server_class = _SERVERS.get(backend_of(config), LightpandaServer)
    return server_class(config)


_SERVERS: dict[Backend, type[EmbeddedServer]] = {
    LIGHTPANDA: LightpandaServer,
    CHROMIUM: ChromiumServer,
}
