"""One real ``redis-server`` (the Debian package, ``/usr/bin/redis-server``)
for every test that needs Redis: on a Unix socket (mode 0700) in a private
temporary directory of its own (short: a socket path has at most 107 bytes),
no TCP port; stopped and removed by the test.

One fixture per kind of server (as crawlee's ``tests/unit/conftest.py`` keeps
one per server), each yielding a :class:`RedisServer` (``.url``,
``unix:///…/redis.sock``, for the settings; ``.client()``):

- ``redis_server``: in memory only, one per test;
- ``module_redis_server``: in memory only, one per test module (tests that
  keep to their own keys, see ``tests.profiles.token``);
- ``durable_redis_server``: its AOF synced on every write (``appendfsync
  always``), one per test: a restart (:meth:`RedisServer.kill` then
  :meth:`RedisServer.start`) loses nothing;
- ``unsynced_redis_server``: AOF written but not synced (``appendfsync
  no``), one per test: for crawl storms, which are not about durability, and
  where a disk made slow by other tests could stall a call past a worker's
  1 s timeout (an outage, in which by design a worker sees only its own
  pauses).

Cluster workers a test started and left running are killed after it (the
``_kill_left_workers`` fixture in ``tests/conftest.py``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import BusyLoadingError, Redis
from redis import ConnectionError as RedisConnectionError

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
#: how long a start may take, seconds (it loads its AOF first)
READY_DEADLINE_S = 30.0


class RedisServer:
    """``redis-server`` serving ``directory/redis.sock`` (default: a new
    private directory, removed at :meth:`stop`), its log in
    ``directory/redis.log``. ``appendonly``: AOF persistence in the directory
    (to survive a restart), synced as ``appendfsync`` says."""

    def __init__(
        self,
        directory: Path | None = None,
        *,
        appendonly: bool = False,
        appendfsync: str = "always",
    ) -> None:
        self._own_directory = directory is None
        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix="cdp-redis-"))  # mode 0700
        self.directory = directory
        self.socket = directory / "redis.sock"
        self.url = f"unix://{self.socket}"
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        """Start it (again, on the same files), and wait until it answers (it
        loads its AOF first).

        :raises AssertionError: not answering within the deadline, with its log."""
        argv = [
            REDIS_SERVER, "--port", "0", "--unixsocket", str(self.socket),
            "--unixsocketperm", "700", "--dir", str(self.directory), "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync, "--daemonize", "no",
        ]  # fmt: skip
        with (self.directory / "redis.log").open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log)
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            try:
                with self.client() as client:
                    client.ping()
                return
            except (RedisConnectionError, BusyLoadingError, FileNotFoundError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.kill()
                    raise AssertionError(f"redis-server did not start: {self.log()}") from None
                time.sleep(0.05)

    def client(self) -> Redis:
        return Redis(unix_socket_path=str(self.socket), socket_timeout=10)

    def kill(self) -> None:
        """SIGKILL it (what it has not written to its AOF is lost)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.socket.unlink(missing_ok=True)

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop_keeping_directory(self) -> None:
        """Stop the server; its directory stays (to start one again on the same socket)."""
        self._own_directory = False
        self.stop()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.socket.unlink(missing_ok=True)
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def module_redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
def durable_redis_server() -> Iterator[RedisServer]:
    server = RedisServer(appendonly=True)
    yield server
    server.stop()


@pytest.fixture
def unsynced_redis_server() -> Iterator[RedisServer]:
    server = RedisServer(appendonly=True, appendfsync="no")
    yield server
    server.stop()


#: how long a test waits for a state of Redis another process sets, seconds
WAIT_DEADLINE_S = 120.0


def wait_for(condition: object, what: str) -> None:
    """Wait for ``condition()``, a state of a Redis server (its own report, or
    one another process sets), polling every 50 ms, at most
    :data:`WAIT_DEADLINE_S`.

    :raises AssertionError: naming ``what`` when it never holds.
    """
    deadline = time.monotonic() + WAIT_DEADLINE_S
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_DEADLINE_S} s: {what}")
        time.sleep(0.05)
