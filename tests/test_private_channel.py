"""No other local user can open a CDP session on a server the plugin starts.

While a real crawl holds pages open, a probe run as user ``nobody`` (with
``runuser``, the system's python3 and the standard library only) tries every
TCP port the crawl's servers listen on and every Unix socket path they have:
each must fail (there is no TCP listener at all; the sockets answer EACCES).
The same probe run as the crawl's own user reaches the sockets, so the probe
itself is shown to work. Needs root (to become ``nobody``): skipped otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
import pytest_twisted
import scrapy
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.cdp import CDPConnection
from scrapy_cdp_pool.browser.cdp.transport import split_unix_url
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.profiles.relay import unix_socket_relay
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.crawl import crawl
from tests.profiles import write_profile
from tests.servers import SiteServer

SYSTEM_PYTHON = "/usr/bin/python3"

#: stdlib only: tries each TCP port on 127.0.0.1 and each Unix socket path,
#: sends a WebSocket upgrade, prints what happened as JSON
PROBE = r"""
import json, socket, sys
targets = json.loads(sys.argv[1])
upgrade = (b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
out = []
for kind, where in targets:
    family = socket.AF_INET if kind == "tcp" else socket.AF_UNIX
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", where) if kind == "tcp" else where)
        s.sendall(upgrade)
        answer = s.recv(64).decode("latin-1")
        out.append([kind, where, "connected", answer])
    except OSError as e:
        out.append([kind, where, "refused", e.errno])
    finally:
        s.close()
print(json.dumps(out))
"""


def _probe(targets: list[tuple[str, Any]], as_nobody: bool) -> list[list[Any]]:
    prefix = ["runuser", "-u", "nobody", "--"] if as_nobody else []
    done = subprocess.run(
        [*prefix, SYSTEM_PYTHON, "-c", PROBE, json.dumps(targets)],
        capture_output=True, text=True, timeout=60, cwd="/", check=True,
    )  # fmt: skip
    result: list[list[Any]] = json.loads(done.stdout)
    return result


def _server_tree(pids: list[int]) -> list[psutil.Process]:
    procs = []
    for pid in pids:
        leader = psutil.Process(pid)
        procs.append(leader)
        procs.extend(leader.children(recursive=True))
    return procs


def _listeners(procs: list[psutil.Process]) -> tuple[list[int], list[str]]:
    """TCP ports listened on, and Unix socket paths (not abstract), of ``procs``."""
    ports: set[int] = set()
    paths: set[str] = set()
    for proc in procs:
        try:
            inet = proc.net_connections(kind="inet")
            unix = proc.net_connections(kind="unix")
        except psutil.NoSuchProcess:
            continue
        ports.update(c.laddr.port for c in inet if c.status == psutil.CONN_LISTEN)
        for c in unix:
            path = c.laddr if isinstance(c.laddr, str) else ""
            if path.startswith("/"):
                paths.add(path)
    return sorted(ports), sorted(paths)


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None or not Path(SYSTEM_PYTHON).exists(),
    reason="needs root, runuser and /usr/bin/python3 to probe as user nobody",
)


@needs_root
@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_no_other_user_can_reach_a_server_the_crawl_started(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    seen: dict[str, Any] = {}
    settings: dict[str, Any] = {"CDP_POOL_BROWSER": browser}
    meta: dict[str, Any] = {}
    if browser == "lightpanda":
        # A time zone: the profile's pages go to a dedicated Lightpanda server.
        write_profile(tmp_path, "tokyo", identity={"timezoneId": "Asia/Tokyo"})
        settings["CDP_POOL_PROFILES_DIR"] = str(tmp_path)
        meta["cdp_profile"] = "tokyo"

    def probe(spider: Any, response: Any) -> list[Any]:
        pool = runtime_of(spider.crawler).pool
        assert pool is not None
        assert pool.server is not None
        pids = pool.server_pids()
        seen["servers"] = len(pids)
        ports, paths = _listeners(_server_tree(pids))
        servers = [pool.server]
        if pool.dedicated is not None:
            servers += [p.server for p in pool.dedicated.pools.values() if p.server is not None]
        endpoints = [s.endpoint or "" for s in servers]
        for endpoint in endpoints:
            if endpoint.startswith("ws+unix://"):
                path = split_unix_url(endpoint)[0]
                paths = sorted({*paths, path})
                modes = (os.stat(path).st_mode, os.stat(Path(path).parent).st_mode)
                seen.setdefault("modes", []).append(tuple(stat.S_IMODE(m) for m in modes))
        for server in servers:
            assert server.private_dir is not None
            seen.setdefault("dir_modes", []).append(stat.S_IMODE(server.private_dir.stat().st_mode))
        targets = [("tcp", p) for p in ports] + [("unix", p) for p in paths]
        seen["ports"], seen["paths"] = ports, paths
        seen["nobody"] = _probe(targets, as_nobody=True)
        seen["owner"] = _probe([("unix", p) for p in paths], as_nobody=False)
        return []

    held = [
        scrapy.Request(site.url(f"/inflight?ms=4000&key=held-{browser}-{i}"), meta={"cdp": True})
        for i in range(2)
    ]
    probed = scrapy.Request(
        site.url(f"/js?probe-{browser}"), meta={"cdp": True, "then": probe, **meta}
    )
    spider, _ = await crawl([*held, probed], settings)

    assert not spider.failures, spider.failures
    assert seen["servers"] == (2 if browser == "lightpanda" else 1)  # dedicated one included
    assert seen["ports"] == []  # no TCP listener at all
    for kind, where, outcome, detail in seen["nobody"]:
        assert (outcome, detail) == ("refused", 13), (kind, where, outcome, detail)  # EACCES
    if browser == "lightpanda":
        assert len(seen["paths"]) >= 2  # both servers' sockets were tried
        assert seen["modes"] == [(0o600, 0o700)] * 2
        # The crawl's own user does reach them: the probe itself works.
        lightpanda_sockets = [r for r in seen["owner"] if r[1].endswith("/cdp.sock")]
        assert len(lightpanda_sockets) == 2
        assert all(r[2:4] == ["connected", r[3]] and "101" in r[3] for r in lightpanda_sockets)
    assert set(seen["dir_modes"]) == {0o700}


async def _upgrade(url: str) -> bytes:
    """Send a WebSocket upgrade to ``url`` (ws://127.0.0.1:port/path); the
    status line of the answer, or b"" when the connection is refused."""
    parts = urlsplit(url)
    try:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    except OSError:
        return b""
    writer.write(
        f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    line = await reader.readline()
    writer.close()
    return line.strip()


async def _relay_checks() -> dict[str, Any]:
    seen: dict[str, Any] = {}
    server = embedded_server(PoolConfig())
    endpoint = await server.ensure_running()
    try:
        async with unix_socket_relay(endpoint) as url:
            token = urlsplit(url).path.lstrip("/")
            seen["token_length"] = len(token)
            base = url.removesuffix(token)
            seen["no_token"] = await _upgrade(base)
            seen["wrong_token"] = await _upgrade(base + "x" * len(token))
            cdp = await CDPConnection.open(url, open_timeout_s=10, command_timeout_s=10)
            seen["version"] = (await cdp.send("Browser.getVersion"))["product"]
            seen["second"] = await _upgrade(url)  # one upgrade only
            await cdp.close()
        seen["after"] = await _upgrade(url)
    finally:
        await server.stop()
    return seen


@pytest_twisted.ensureDeferred
async def test_the_sign_in_relay_takes_one_upgrade_at_its_secret_path() -> None:
    seen = await Deferred.fromFuture(asyncio.ensure_future(_relay_checks()))
    assert seen["token_length"] >= 43  # 32 random bytes
    assert seen["no_token"] == seen["wrong_token"] == b"HTTP/1.1 404 Not Found"
    assert seen["version"]  # Lightpanda answered through the relay
    assert seen["second"] == seen["after"] == b""  # no longer listening
