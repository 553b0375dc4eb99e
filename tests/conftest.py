from __future__ import annotations

import compileall
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.long_tests import start_long_tests_first
from tests.redis_server import (  # noqa: F401 - the Redis fixtures, one per kind of server
    durable_redis_server,
    module_redis_server,
    redis_server,
    unsynced_redis_server,
)
from tests.servers import ChromiumProcess, LightpandaProcess, SiteServer

# Byte-code caches on for the suite's own processes, whatever the shell says
# (``PYTHONDONTWRITEBYTECODE``, set on some CI machines): without them each
# of the ~600 Python processes a run starts (xdist workers, ``scrapy crawl``
# subprocesses, test servers) compiled the package again, ~0.3 CPU-s each,
# and each worker rewrote every test module's assertions, ~4 CPU-s.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="module", autouse=True)
def _shared_browsers(request: pytest.FixtureRequest) -> Iterator[None]:
    """In a module of ``SHARED_BROWSERS = True``, the crawls of
    :func:`tests.crawl.crawl` with the same settings share one embedded
    server, closed after the module's last test."""
    if not getattr(request.module, "SHARED_BROWSERS", False):
        yield
        return
    from tests import crawl  # Scrapy and the package: imported by the tests that need them

    crawl.share_browsers()
    try:
        yield
    finally:
        crawl.stop_sharing()


@pytest.fixture(autouse=True)
def _own_browser(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``own_browser`` in a module of ``SHARED_BROWSERS =
    True``: its crawls start their own embedded server (elsewhere they do
    anyway)."""
    if request.node.get_closest_marker("own_browser") is None:
        yield
        return
    from tests import crawl

    with crawl.not_shared():
        yield


@pytest.fixture(scope="session")
def site() -> Iterator[SiteServer]:
    server = SiteServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tls_site() -> Iterator[SiteServer]:
    """The test site over HTTPS with a self-signed certificate."""
    server = SiteServer(tls=True)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def lightpanda_endpoint() -> Iterator[str]:
    server = LightpandaProcess()
    yield server.endpoint
    server.stop()


@pytest.fixture(scope="session")
def chromium_endpoint() -> Iterator[str]:
    server = ChromiumProcess()
    yield server.endpoint
    server.stop()


@pytest.fixture(autouse=True)
def _kill_left_workers() -> Iterator[None]:
    """Cluster workers a test started and left running (it failed) are
    SIGKILLed after it, before its Redis fixture stops the server."""
    yield
    harness = sys.modules.get("tests.cluster_harness")
    if harness is not None:
        harness.kill_left()


def pytest_configure(config: pytest.Config) -> None:
    """Before the xdist workers start (in the controller, or a run without
    xdist): the package and the tests byte-compiled once, for every
    process of the run to load (~3 CPU-s)."""
    if getattr(config, "workerinput", None) is None:
        root = Path(__file__).resolve().parent.parent
        for folder in ("scrapy_cdp_pool", "tests"):
            compileall.compile_dir(root / folder, quiet=2)


@pytest.hookimpl(trylast=True)  # after -k / -m deselected what they do
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the longest tests start first (tests/long_tests.py)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        start_long_tests_first(items, int(workerinput["workercount"]))
