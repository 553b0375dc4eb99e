"""One embedded CDP server process this crawler owns (:class:`EmbeddedServer`):
its private directory and environment, start with a deadline, ready check,
restart, stop of its whole process tree; the Lightpanda and Chromium kinds are
in :mod:`~scrapy_cdp_pool.browser.pool.servers`.

Each runs in its own process group, so the whole tree (Chromium is a dozen
processes) is stopped with its leader, and on Linux the leader is sent SIGTERM
if the crawler process dies first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import logging
import os
import shutil
import signal
import socket
import sys
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from pathlib import Path

from scrapy_cdp_pool.browser.backends import Backend
from scrapy_cdp_pool.browser.cdp import CDPConnection
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo, discover
from scrapy_cdp_pool.browser.pool.favicon_block import BrowserFaviconBlock
from scrapy_cdp_pool.browser.pool.lightpanda_reports import LightpandaReports
from scrapy_cdp_pool.browser.pool.private_dir import make_private_dir, record_server, sweep_once
from scrapy_cdp_pool.errors import ServerMisconfigured, ServerStartError
from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)


def _die_with_parent(parent: int) -> None:  # pragma: no cover - runs in the child
    """Ask for SIGTERM when ``parent`` (the crawl) dies; a parent that died
    between the fork and the request (a crawl SIGKILLed while its browser
    starts) is not signalled for: then exit before the browser runs."""
    os.setsid()
    if sys.platform == "linux":
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)


CRASH_LOOP_RESTARTS = 5
"""Restarts within :data:`CRASH_LOOP_WINDOW_S` that make a crash loop (one ERROR)."""
CRASH_LOOP_WINDOW_S = 60.0

_MISCONFIGURED_ERRNOS = {errno.ENOENT, errno.EACCES, errno.ENOEXEC, errno.ENOTDIR}

_XDG = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


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


def child_setup(pipe_fds: tuple[int, int] | None) -> Callable[[], None]:
    parent = os.getpid()

    def setup() -> None:  # pragma: no cover - runs in the child
        _die_with_parent(parent)
        if pipe_fds is not None:
            # Chromium's --remote-debugging-pipe: it reads fd 3, writes fd 4.
            # Moved out of the way first, in case either already is 3 or 4.
            high = [dup_above(fd, 10) for fd in pipe_fds]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

    return setup


def dup_above(fd: int, floor: int) -> int:
    """A duplicate of ``fd`` numbered ``floor`` or more: ``fcntl``'s
    ``F_DUPFD`` through ``os.dup`` alone, as ``fcntl`` is POSIX-only and the
    package must import without it (Windows). The lower duplicates taken on the
    way are closed."""
    lower: list[int] = []
    try:
        new = os.dup(fd)
        while new < floor:
            lower.append(new)
            new = os.dup(fd)
    finally:
        for spare in lower:
            os.close(spare)
    return new


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
        self._restart_times: deque[float] = deque()  # monotonic times of recent restarts
        self._crash_loop_logged = False
        #: what it is for, in logs (a dedicated server's proxy or time zone)
        self.purpose = ""
        #: what it said on stderr about pages it closed (Lightpanda's), else None
        self.reports: LightpandaReports | None = None
        #: what fails its own favicon requests on its browser session (the
        #: embedded Chromium's), else None
        self.favicon_block: BrowserFaviconBlock | None = None
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
                self._log_restart(self._proc.pid, how)
                await self._kill(1.0)
                await self._cleanup()
            self._stopping = False
            sweep_once()
            try:
                self.private_dir = make_private_dir(self.kind)
            except OSError as e:  # TMPDIR too long and no short place, or not writable
                raise ServerMisconfigured(f"the embedded {self.kind} server: {e}") from e
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

    def _log_restart(self, pid: int, how: str) -> None:
        """One line per restart (``pid``: the server that died, ``how``: why),
        a WARNING; once the server died :data:`CRASH_LOOP_RESTARTS` times
        within :data:`CRASH_LOOP_WINDOW_S`,
        one ERROR naming the loop, and INFO lines after it (before:
        a crash loop logged 111 WARNINGs and no ERROR)."""
        now = time.monotonic()
        recent = self._restart_times
        recent.append(now)
        while recent and now - recent[0] > CRASH_LOOP_WINDOW_S:
            recent.popleft()
        where = f" {self.purpose}" if self.purpose else ""
        if self._crash_loop_logged:
            level = logging.INFO
        elif len(recent) >= CRASH_LOOP_RESTARTS:
            self._crash_loop_logged = True
            logger.error(
                "The embedded %s server%s keeps dying: %d restarts in %.0f s (the last: pid %s "
                "%s); restarting it each time, later restarts logged at INFO and counted in "
                "cdp_pool/server_restarts", self.kind, where, len(recent), now - recent[0],
                pid, how,
            )  # fmt: skip
            return
        else:
            level = logging.WARNING
        logger.log(
            level, "The embedded %s server%s (pid %s) %s; restarting it", self.kind, where,
            pid, how,
        )  # fmt: skip

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
                preexec_fn=child_setup(pipe_fds),
                pass_fds=(3, 4) if pipe_fds is not None else (),
                env=self._env(),
            )
        except OSError as e:
            # not found, not executable, not a program: another try fails the same way
            kind = ServerMisconfigured if e.errno in _MISCONFIGURED_ERRNOS else ServerStartError
            raise kind(f"cannot start {argv[0]}: {e}") from e
        record_server(self._dir(), self._proc.pid)  # swept if the crawl dies without it
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
