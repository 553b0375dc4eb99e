"""A real ``redis-server`` (the Debian package, ``/usr/bin/redis-server``) for
the cluster tests: on a Unix socket (mode 0700) in a private temporary
directory of its own (short: a socket path has at most 107 bytes), no TCP
port, no persistence unless asked; stopped and removed by the test.

``redis_server`` is the fixture: ``.url`` (``unix:///…/redis.sock``) for the
settings, ``.client()`` for a ``redis.Redis`` on it.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis

from tests.servers import START_DEADLINE_S

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """``redis-server`` serving ``directory/redis.sock`` (default: a new
    private directory, removed at :meth:`stop`). ``appendonly``: AOF
    persistence in the directory (to survive a restart)."""

    def __init__(self, directory: Path | None = None, *, appendonly: bool = False) -> None:
        self._own_directory = directory is None
        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix="cdp-redis-"))  # mode 0700
        self.directory = directory
        self.socket = directory / "redis.sock"
        self.url = f"unix://{self.socket}"
        argv = [
            # stdbuf: its log line by line through the pipe, to see "ready"
            "stdbuf", "-oL", REDIS_SERVER, "--port", "0", "--unixsocket", str(self.socket),
            "--unixsocketperm", "700", "--dir", str(directory), "--save", "",
            "--appendonly", "yes" if appendonly else "no", "--logfile", "",
            "--loglevel", "notice", "--daemonize", "no",
        ]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except RuntimeError:
            self.stop()
            raise
        # Keep reading its log so that a full pipe never blocks it.
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _wait_ready(self) -> None:
        """Read its log (raw, with a deadline) until it says it is ready."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + START_DEADLINE_S
        log = b""
        while b"ready to accept connections" not in log.lower():
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise RuntimeError(f"redis-server not ready within {START_DEADLINE_S} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"redis-server did not start: {log[-500:]!r}")
            log += chunk

    def _read_log(self) -> None:
        assert self.proc.stdout is not None
        for _line in self.proc.stdout:
            pass

    def client(self) -> Redis:
        return Redis.from_url(self.url)

    def stop_keeping_directory(self) -> None:
        """Stop the server; its directory stays (to start one again on the same socket)."""
        self._own_directory = False
        self.stop()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        if getattr(self, "_drain", None) is not None:
            self._drain.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
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
