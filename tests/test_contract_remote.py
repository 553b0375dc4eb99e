"""The handler contract on a remote endpoint: a Lightpanda server the tests
start themselves and hand to the pool through CDP_POOL_ENDPOINTS."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract import HandlerContract


class TestRemoteLightpanda(HandlerContract):
    loads_images = False
    has_layout = False

    @pytest.fixture(autouse=True)
    def _endpoint(self, lightpanda_endpoint: str) -> None:
        self.endpoint = lightpanda_endpoint

    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_ENDPOINTS": [self.endpoint]}
