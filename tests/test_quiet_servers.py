"""The embedded servers do nothing on their own: no connection the pages did
not cause, nothing left in the temporary directory or $HOME after a clean
stop, and what a killed crawl left is removed by the next start."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
import pytest_twisted
import scrapy
from lightpanda.client import find_binary
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.pool import private_dir
from scrapy_cdp_pool.browser.pool.private_dir import MARKER
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.crawl import crawl
from tests.profiles import write_profile
from tests.servers import ROOT, SiteServer

_CONNECT = re.compile(
    r"connect\(\d+<(\w+?)v?6?:.*?\{sa_family=AF_INET6?, sin6?_port=htons\((\d+)\), "
    r"(?:sin_addr=inet_addr\(\"([^\"]+)\"\)|.*?inet_pton\(AF_INET6, \"([^\"]+)\")"
)
#: Chromium's IPv6 reachability check (net/dns): connect() on a UDP socket
#: sets its peer and sends nothing; the one "connection" allowed
_IPV6_PROBE = ("UDP", "2001:4860:4860::8888", 443)


def _traced(tmp_path: Path, real: str, log: Path) -> str:
    """A wrapper that runs ``real`` under ``strace -f -e trace=connect``."""
    wrapper = tmp_path / f"traced-{Path(real).name}"
    wrapper.write_text(
        f'#!/bin/sh\nexec strace -f -qq -yy -e trace=connect -o "{log}" "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper)


def _network_connects(log: Path) -> list[tuple[str, str, int]]:
    """(protocol, address, port) of every IPv4/IPv6 connect() in the strace log."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        match = _CONNECT.search(line)
        if match:
            found.append((match.group(1), match.group(3) or match.group(4), int(match.group(2))))
    return found


needs_strace = pytest.mark.skipif(
    shutil.which("strace") is None,
    reason="strace is not installed (README's test command installs it: apt-get install strace)",
)


@needs_strace
@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_the_servers_connect_only_where_the_pages_lead(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    """Every connect() of every server process (strace from exec on, so the
    start-up is seen too) goes to the test site: no telemetry, no DNS
    look-up, no update or safe-browsing service. On Lightpanda a profile with
    a time zone brings a dedicated server into the crawl too."""
    log = tmp_path / "connects.log"
    settings: dict[str, Any] = {"CDP_POOL_BROWSER": browser}
    meta: dict[str, Any] = {"cdp": True}
    if browser == "lightpanda":
        settings["CDP_POOL_LIGHTPANDA_PATH"] = _traced(tmp_path, str(find_binary()), log)
        write_profile(tmp_path, "tokyo", identity={"timezoneId": "Asia/Tokyo"})
        settings["CDP_POOL_PROFILES_DIR"] = str(tmp_path)
    else:
        settings["CDP_POOL_CHROMIUM_PATH"] = _traced(tmp_path, "/usr/bin/chromium", log)
    requests = [scrapy.Request(site.url(f"/js?quiet-{browser}-{i}"), meta=meta) for i in range(3)]
    if browser == "lightpanda":
        requests.append(
            scrapy.Request(site.url("/js?quiet-tokyo"), meta={**meta, "cdp_profile": "tokyo"})
        )
    spider, _ = await crawl(requests, settings)
    assert len(spider.responses) == len(requests), spider.failures
    site_address = urlsplit(site.base)
    to_site = ("TCP", site_address.hostname, site_address.port)
    connects = _network_connects(log)
    assert to_site in connects  # the trace sees the pages
    assert [c for c in connects if c not in (to_site, _IPV6_PROBE)] == []


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """A temporary directory and $HOME of the test's own, empty. Under /tmp
    with a short name: a Unix socket's path has at most 107 bytes, and
    Chromium puts one in TMPDIR."""
    base = Path(tempfile.mkdtemp(prefix="q", dir="/tmp"))
    tmp, home = base / "tmp", base / "home"
    tmp.mkdir()
    home.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    yield {"tmp": tmp, "home": home}
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_clean_crawl_leaves_nothing_behind(
    site: SiteServer, private_tmp: dict[str, Path], browser: str
) -> None:
    """Nothing in the temporary directory (Chromium's
    ``org.chromium.Chromium.*`` included) or under $HOME (Chromium's crash
    database) once the crawl is over."""
    seen: dict[str, Any] = {}

    def then(spider: Any, response: Any) -> list[Any]:
        seen["during"] = sorted(p.name for p in private_tmp["tmp"].iterdir())
        return []

    requests = [
        scrapy.Request(site.url(f"/js?leftovers-{browser}"), meta={"cdp": True, "then": then})
    ]
    spider, _ = await crawl(requests, {"CDP_POOL_BROWSER": browser})
    assert len(spider.responses) == 1, spider.failures
    assert [name.rsplit("-", 1)[0] for name in seen["during"]] == [f"cdp-pool-{browser}"]
    assert sorted(p.name for p in private_tmp["tmp"].iterdir()) == []
    scrapy_own = private_tmp["home"] / ".local" / "state" / "scrapy"  # Scrapy's, not ours
    written = [p for p in private_tmp["home"].rglob("*") if not p.is_dir()]
    assert [str(p) for p in written if not p.is_relative_to(scrapy_own)] == []


_KILLED_SPIDER = """
import scrapy

class Held(scrapy.Spider):
    name = "held"
    custom_settings = {
        "ADDONS": {"scrapy_cdp_pool.Addon": 0},
        "CDP_POOL_BROWSER": "chromium",
        "TELNETCONSOLE_ENABLED": False,
    }

    async def start(self):
        yield scrapy.Request(%r, meta={"cdp": True})

    def parse(self, response):
        pass
"""


def _kill_a_crawl_holding_a_page(site: SiteServer, tmp: Path) -> None:
    """Run a Chromium crawl in a subprocess, wait until its page reaches the
    site (its browser is up, its directory made), then SIGKILL it."""
    spider_file = tmp.parent / "held.py"
    # A key of its own: the session's site counts other tests' /inflight hits too,
    # which would end the wait below before this crawl made its directory's marker.
    key = f"killed-{os.getpid()}-{time.monotonic_ns()}"
    spider_file.write_text(_KILLED_SPIDER % site.url(f"/inflight?ms=60000&key={key}"))
    crawler = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "runspider", str(spider_file), "-L", "WARNING"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        # Wait for the held page to reach the site (its browser is up, its
        # directory made), then kill the crawler without a chance to clean.
        while site.stats()["inflight_max"].get(key, 0) < 1 or not list(tmp.glob("cdp-pool-*")):
            assert crawler.poll() is None, "the crawl ended before it was killed"
            assert time.monotonic() < deadline, "the held page never reached the site"
            time.sleep(0.05)
    finally:
        crawler.send_signal(signal.SIGKILL)
        crawler.wait(10)
    # Its browser gets SIGTERM as the crawler dies (PR_SET_PDEATHSIG): wait
    # until it is gone, so that nothing writes in its directory any more.
    left = str(next(tmp.glob("cdp-pool-*")))
    browsers = [
        p for p in psutil.process_iter(["cmdline"]) if left in " ".join(p.info["cmdline"] or [])
    ]
    _, alive = psutil.wait_procs(browsers, timeout=30)
    assert alive == []


@pytest_twisted.ensureDeferred
async def test_a_killed_crawls_directories_are_removed_at_the_next_start(
    site: SiteServer, private_tmp: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crawl SIGKILLed while its Chromium holds a page leaves its private
    directory; the next start removes it, and only it: not a directory
    without the marker, not one whose maker still runs."""
    tmp = private_tmp["tmp"]
    _kill_a_crawl_holding_a_page(site, tmp)
    left = list(tmp.glob("cdp-pool-*"))
    assert len(left) == 1
    assert (left[0] / MARKER).is_file()
    foreign = tmp / "cdp-pool-not-ours"
    foreign.mkdir()
    alive = tmp / "cdp-pool-alive"
    alive.mkdir()
    (alive / MARKER).write_text(json.dumps({"pid": os.getpid(), "start_time": None}))

    monkeypatch.setattr(private_dir, "_swept", False)  # this process's first start again
    server = embedded_server(PoolConfig())
    await Deferred.fromFuture(asyncio.ensure_future(server.ensure_running()))
    try:
        assert server.private_dir is not None
        assert sorted(p.name for p in tmp.iterdir()) == sorted(
            ["cdp-pool-alive", "cdp-pool-not-ours", server.private_dir.name]
        )
    finally:
        await Deferred.fromFuture(asyncio.ensure_future(server.stop()))
    assert sorted(p.name for p in tmp.iterdir()) == ["cdp-pool-alive", "cdp-pool-not-ours"]


@pytest_twisted.ensureDeferred
async def test_a_users_own_disable_features_adds_to_ours(private_tmp: dict[str, Path]) -> None:
    """Chromium reads only the last ``--disable-features``: a user's own in
    ``CDP_POOL_CHROMIUM_ARGS`` is merged into the plugin's one list (before:
    it replaced it, switching the back-forward cache that page reuse's
    isolation relies on, and the services that phone home, back on)."""
    config = PoolConfig(browser="chromium", chromium_args=("--disable-features=Foo,Translate",))
    server = embedded_server(config)
    await Deferred.fromFuture(asyncio.ensure_future(server.ensure_running()))
    try:
        assert server.pid
        argv = psutil.Process(server.pid).cmdline()
    finally:
        await Deferred.fromFuture(asyncio.ensure_future(server.stop()))
    [features] = [a for a in argv if a.startswith("--disable-features")]
    listed = features.removeprefix("--disable-features=").split(",")
    assert {"BackForwardCache", "Translate", "NetworkTimeServiceQuerying", "Foo"} <= set(listed)
    assert listed.count("Translate") == 1
