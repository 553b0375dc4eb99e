"""Embedded CDP servers: the Lightpanda binary of the ``lightpanda`` wheel, or a
local Chromium. Start, wait until ready (with a deadline), stop, restart.

Neither listens on a network port: Lightpanda serves CDP on a Unix socket
(``serve --unix-socket``, mode 0600) in a private directory (mode 0700, see
:mod:`~scrapy_cdp_pool.browser.pool.private_dir`), Chromium over a pipe
(``--remote-debugging-pipe``): no other local user can open a CDP session on
them. Neither phones home: Lightpanda runs with
``LIGHTPANDA_DISABLE_TELEMETRY=true``, Chromium with its background services
switched off (:data:`~scrapy_cdp_pool.browser.pool.server_flags.CHROMIUM_FLAGS`). What
every embedded server does (process group, start deadline, stop of its whole
tree) is :class:`~scrapy_cdp_pool.browser.pool.embedded_server.EmbeddedServer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from pathlib import Path
from typing import Any

from scrapy_cdp_pool.browser.backends import CHROMIUM, LIGHTPANDA, Backend, backend_of, sets_flag
from scrapy_cdp_pool.browser.cdp import (
    CDPConnectError,
    CDPConnection,
    CDPConnectionClosed,
    CDPError,
)
from scrapy_cdp_pool.browser.cdp.transport import unix_socket_url
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo, info_from_browser_version
from scrapy_cdp_pool.browser.pool.embedded_server import EmbeddedServer
from scrapy_cdp_pool.browser.pool.favicon_block import BrowserFaviconBlock, needs_browser_block
from scrapy_cdp_pool.browser.pool.heap_limit import heap_limit_args
from scrapy_cdp_pool.browser.pool.lightpanda_reports import LightpandaReports
from scrapy_cdp_pool.browser.pool.server_flags import (
    CHROMIUM_FLAGS,
    LIGHTPANDA_ENV,
    chromium_flags,
    http_cache_args,
    lightpanda_flags,
    lightpanda_log_flags,
    merge_feature_lists,
    watchdog_ms,
)
from scrapy_cdp_pool.browser.pool.server_options import ServerOptions
from scrapy_cdp_pool.errors import ServerMisconfigured, ServerStartError
from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)

#: the default backend refused at start when its binary cannot be found (%s: why)
LIGHTPANDA_MISSING = (
    "CDP_POOL_BROWSER = 'lightpanda' (the default) cannot start: %s. Install it with "
    "pip install 'scrapy-cdp-pool[lightpanda]' (wheels for Linux x86_64/aarch64 with "
    "glibc 2.35 or later, macOS 13 or later on Intel, 14 on Apple silicon), or set "
    "CDP_POOL_BROWSER = 'chromium' (a local Chromium), CDP_POOL_ENDPOINTS (remote CDP "
    "servers) or CDP_POOL_LIGHTPANDA_PATH (a Lightpanda binary installed by hand); "
    "see docs/install.md"
)

#: the environment variables libcurl takes a proxy (or its exceptions) from
PROXY_VARIABLES = frozenset({"http_proxy", "https_proxy", "all_proxy", "no_proxy"})

#: the longest path of a Unix socket (``sun_path`` is 108 bytes on Linux)
MAX_SOCKET_PATH = 107
#: seconds to wait for a Chromium whose pipe closed at start to be reaped, so
#: that its exit code (not "pipe closed") names the cause
PIPE_CLOSED_EXIT_WAIT_S = 2.0


class LightpandaServer(EmbeddedServer):
    """``lightpanda serve`` from the ``lightpanda`` wheel (or
    ``CDP_POOL_LIGHTPANDA_PATH``) on a Unix socket in its private directory,
    with telemetry off (:data:`LIGHTPANDA_ENV`), ``--cdp-max-connections`` at least the
    pool's connections (Lightpanda answers HTTP 503 past it), and
    ``--watchdog-ms`` below ``DOWNLOAD_TIMEOUT`` (:func:`watchdog_ms`) unless
    ``CDP_POOL_LIGHTPANDA_ARGS`` sets it."""

    backend = LIGHTPANDA

    def __init__(self, config: PoolConfig) -> None:
        super().__init__(config)
        #: what this server said about the pages it closed
        self.reports = self._reports = LightpandaReports()

    def _on_stderr_line(self, line: bytes) -> None:
        self._reports.note_stderr_line(line)  # over its heap ceiling, or stopped by the watchdog

    def binary(self) -> str:
        """``CDP_POOL_LIGHTPANDA_PATH``, else the ``lightpanda`` package's binary.

        :raises ServerStartError: the package is not installed (an extra,
            ``scrapy-cdp-pool[lightpanda]``: it has wheels for some platforms
            only) or has no binary; the message says what to do instead."""
        if self.config.lightpanda_path:
            return self.config.lightpanda_path
        try:
            from lightpanda.client import find_binary  # the wheel's own lookup
            from lightpanda.errors import ProcessError
        except ImportError:
            raise ServerMisconfigured(
                LIGHTPANDA_MISSING % "the lightpanda package is not installed"
            ) from None
        try:
            return str(find_binary())
        except ProcessError as e:
            raise ServerMisconfigured(
                LIGHTPANDA_MISSING % f"the lightpanda package has no binary ({e})"
            ) from None

    def checked_binary(self) -> str:
        """The binary's path.

        :raises ServerStartError: it is not a file."""
        binary = self.binary()
        if not Path(binary).is_file():
            raise ServerMisconfigured(
                f"CDP_POOL_LIGHTPANDA_PATH: {binary!r} is not a file "
                "(pip install lightpanda ships the binary)"
            )
        return binary

    def _env(self) -> dict[str, str]:
        """Without the crawler's proxy variables: a page's proxy is its
        context's, the one Scrapy chose (``meta["proxy"]``, which its
        ``HttpProxyMiddleware`` fills from the same variables, ``no_proxy``
        honoured); Lightpanda's libcurl would otherwise send a page Scrapy
        sends direct through ``http_proxy``, or a proxied one around its
        context's proxy for ``no_proxy``. A dedicated server's own
        (:attr:`extra_env`) stay."""
        env = {k: v for k, v in super()._env().items() if k.lower() not in PROXY_VARIABLES}
        return {**env, **LIGHTPANDA_ENV, **self.extra_env}

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
            raise ServerMisconfigured(
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
            *lightpanda_log_flags(self.config),
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
        self.favicon_block: BrowserFaviconBlock = BrowserFaviconBlock()

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

    async def _block_favicons(self, cdp: CDPConnection) -> None:
        """Fail the browser's own favicon requests on its browser session
        too (:mod:`~scrapy_cdp_pool.browser.pool.favicon_block`).

        :raises ServerStartError: it refused ``Fetch.enable``."""
        try:
            await self.favicon_block.install(cdp)
        except CDPError as e:
            raise ServerStartError(
                f"chromium refused Fetch.enable on its browser session: {e}"
            ) from e

    def checked_binary(self) -> str:
        """The binary's path.

        :raises ServerStartError: it is not an executable file."""
        path = self.config.chromium_path
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise ServerMisconfigured(
                f"CDP_POOL_CHROMIUM_PATH: {path!r} is not an executable "
                "(on Debian: apt-get install chromium-headless-shell, or chromium)"
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
        argv = merge_feature_lists(
            [
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
        )
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
            if needs_browser_block(self.config.reuse_pages, self.version):
                await self._block_favicons(self.cdp)
            logger.debug("chromium pid %s serves CDP over its pipe", proc.pid)
            return name
        error = answer.exception() if answer.done() and not answer.cancelled() else None
        if isinstance(error, CDPConnectionClosed) and proc.returncode is None:
            # The pipe closes as the browser dies: its exit, not the closed
            # pipe, is the cause to name (a SIGKILL: code -9), once reaped.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), PIPE_CLOSED_EXIT_WAIT_S)
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
    :mod:`~scrapy_cdp_pool.browser.pool.server_options`), whatever the browser."""
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
