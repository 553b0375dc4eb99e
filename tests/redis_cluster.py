"""A real 3-node Redis Cluster (``redis-server --cluster-enabled yes``, the
Debian package) for the cluster tests: three primaries on 127.0.0.1, each on
an ephemeral port whose cluster bus port (+10000) is free too, no persistence,
joined with ``redis-cli --cluster create``; stopped and removed by the test.

``.url(node)`` is ``redis+cluster://127.0.0.1:<port>`` of one node (any node
serves: redis-py's cluster client finds the others); ``.owner(key)`` is the
index of the node that serves ``key``'s hash slot.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from redis.cluster import RedisCluster
from redis.crc import key_slot

from tests.servers import START_DEADLINE_S

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
#: a cluster node's bus port is its port + this (Redis's rule)
BUS_OFFSET = 10000


def _free_port_pair() -> int:
    """A loopback port whose cluster bus port is free too."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port + BUS_OFFSET > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + BUS_OFFSET))
            except OSError:
                continue
        return port


class RedisClusterServers:
    def __init__(self, nodes: int = 3) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="cdp-rcluster-"))  # mode 0700
        self.ports: list[int] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        try:
            for index in range(nodes):
                port = _free_port_pair()
                node_dir = self.directory / str(index)
                node_dir.mkdir()
                argv = [
                    REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "2000", "--dir", str(node_dir), "--save", "",
                    "--appendonly", "no", "--daemonize", "no", "--logfile", "log.txt",
                ]  # fmt: skip
                self.procs.append(subprocess.Popen(argv))
                self.ports.append(port)
            for port in self.ports:
                self._wait(lambda p=port: self._cli(p, "ping") == "PONG", "answer")
            nodes_argv = [f"127.0.0.1:{port}" for port in self.ports]
            subprocess.run(
                [REDIS_CLI, "--cluster", "create", *nodes_argv, "--cluster-replicas", "0",
                 "--cluster-yes"],
                check=True, capture_output=True, timeout=START_DEADLINE_S,
            )  # fmt: skip
            for port in self.ports:
                self._wait(lambda p=port: "cluster_state:ok" in self._cli(p, "cluster", "info"),
                           "join")  # fmt: skip
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _cli(port: int, *command: str) -> str:
        done = subprocess.run(
            [REDIS_CLI, "-p", str(port), *command],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return done.stdout.strip()

    @staticmethod
    def _wait(ready: object, what: str) -> None:
        deadline = time.monotonic() + START_DEADLINE_S
        while not ready():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Redis Cluster's nodes did not {what} in time")
            time.sleep(0.05)

    def url(self, node: int) -> str:
        return f"redis+cluster://127.0.0.1:{self.ports[node]}"

    def client(self) -> RedisCluster:
        return RedisCluster(host="127.0.0.1", port=self.ports[0])

    def owner(self, key: str) -> int:
        """The index of the node that serves ``key``'s slot."""
        node = self.client().get_node_from_key(key)
        assert node is not None
        assert key_slot(key.encode()) >= 0
        return self.ports.index(int(node.port))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.directory, ignore_errors=True)
