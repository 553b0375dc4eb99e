from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import LightpandaProcess, TestSite


@pytest.fixture(scope="session")
def site() -> Iterator[TestSite]:
    server = TestSite()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def lightpanda_endpoint() -> Iterator[str]:
    server = LightpandaProcess()
    yield server.endpoint
    server.stop()
