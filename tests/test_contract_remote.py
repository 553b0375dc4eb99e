"""The handler contract on remote endpoints: a Lightpanda server and a
Chromium (``--remote-debugging-port`` on 127.0.0.1) the tests start themselves
and hand to the pool through CDP_POOL_ENDPOINTS."""

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


class TestRemoteChromium(HandlerContract):
    @pytest.fixture(autouse=True)
    def _endpoint(self, chromium_endpoint: str) -> None:
        self.endpoint = chromium_endpoint

    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_ENDPOINTS": [self.endpoint]}
