"""The handler contract on the embedded Lightpanda (the default backend)."""

from __future__ import annotations

from typing import Any

from tests.contract import HandlerContract

#: crawls of equal settings share one embedded server (tests/crawl.py); a test
#: that counts what its own crawler's server did is marked ``own_browser``
SHARED_BROWSERS = True


class TestEmbeddedLightpanda(HandlerContract):
    # Lightpanda does not fetch <img> unless started with --load-resources image.
    loads_images = False
    # No layout: scroll_to_bottom fails by name (ActionUnsupported).
    has_layout = False

    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_BROWSER": "lightpanda"}
