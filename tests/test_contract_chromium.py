"""The handler contract on an embedded Chromium (apt-get install chromium)."""

from __future__ import annotations

from typing import Any

from tests.contract import HandlerContract

#: crawls of equal settings share one embedded server (tests/crawl.py); a test
#: that counts what its own crawler's server did is marked ``own_browser``
SHARED_BROWSERS = True


class TestEmbeddedChromium(HandlerContract):
    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_BROWSER": "chromium"}
