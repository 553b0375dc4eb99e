"""Issue 13's inputs (items 1, 2, 3, 8) on the embedded Lightpanda."""

from __future__ import annotations

from typing import Any

from tests.fidelity import FidelityContract

#: crawls of equal settings share one embedded server (tests/crawl.py); a test
#: that counts what its own crawler's server did is marked ``own_browser``
SHARED_BROWSERS = True


class TestFidelityLightpanda(FidelityContract):
    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_BROWSER": "lightpanda"}
