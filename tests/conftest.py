from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.long_tests import start_long_tests_first
from tests.redis_server import (  # noqa: F401 - the Redis fixtures, one per kind of server
    durable_redis_server,
    module_redis_server,
    redis_server,
    unsynced_redis_server,
)
from tests.servers import ChromiumProcess, LightpandaProcess, SiteServer


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


@pytest.hookimpl(trylast=True)  # after -k / -m deselected what they do
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the longest tests start first (tests/long_tests.py)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        start_long_tests_first(items, int(workerinput["workercount"]))
