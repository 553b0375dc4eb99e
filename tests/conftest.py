from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_server import redis_server  # noqa: F401 - a fixture (cluster tests)
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
