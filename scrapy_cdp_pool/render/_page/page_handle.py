"""What a page's helpers use of their page, as a protocol: the answers to its
``Fetch`` pauses, its dialogs, its capture and its streamed bodies take a
:class:`PageHandle`, which :class:`~scrapy_cdp_pool.render._page.page.Page`
is, so none of them imports the page that owns them (no import cycle inside
``render/``, type-level ones included)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

from scrapy_cdp_pool.browser.backends import Backend
from scrapy_cdp_pool.render._page.body_size import BodySizeGuard
from scrapy_cdp_pool.render._page.document import DocumentTracker
from scrapy_cdp_pool.render._request.spec import RenderSpec


class PageHandle(Protocol):
    """One page of a render, as its helpers see it (see
    :class:`~scrapy_cdp_pool.render._page.page.Page` for each member)."""

    #: the page's target, also its main frame's id
    target_id: str
    spec: RenderSpec
    backend: Backend
    #: what the main frame shows
    tracker: DocumentTracker
    #: the main document's body counted as it arrives (``DOWNLOAD_MAXSIZE``)
    body_size: BodySizeGuard
    #: the server's HTTP cache ignores cookies (responses kept out of it)
    guard_cache: bool
    #: ``time.monotonic()`` when the page was opened, in seconds
    started_at: float

    def command(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """Queue a command to the page's session; the coroutine waits for its answer."""
        ...

    def fail(self, error: Exception) -> None:
        """End the render with ``error``."""
        ...
