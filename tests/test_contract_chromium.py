"""The handler contract on an embedded Chromium (apt-get install chromium)."""

from __future__ import annotations

from typing import Any

from tests.contract import HandlerContract


class TestEmbeddedChromium(HandlerContract):
    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_BROWSER": "chromium"}
