"""The frames a page's document loaded besides its main frame, to tell
whether a page can be kept for reuse (``CDP_POOL_REUSE_PAGES``).

A kept page's storage is cleared by origin (``Storage.clearDataForOrigin``,
see :mod:`~scrapy_cdp_pool.browser.pool.page_reuse`). A frame of another site keeps
its storage under a key of the top-level site too (partitioned storage), which
clearing by origin does not reach: measured on Chromium 156, a cross-site
iframe's ``localStorage`` counted 1, 2, 3 over three requests on a kept page,
and its ``sessionStorage`` too. Chromium runs such a frame in another process
(site isolation): the page's session sees it attach (``Page.frameAttached``)
but not navigate. So a page in which any frame attached that did not load a
document of the main frame's origin is not kept: it closes with its context
and the profile's next request gets a fresh one, as clean as the first.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class ChildFrames:
    """Fed the page session's ``Page.frameAttached`` and ``Page.frameNavigated``
    events; ``main_frame_id`` is the page's target id (its main frame's id)."""

    def __init__(self, main_frame_id: str) -> None:
        self.main_frame_id = main_frame_id
        self.main_origin = ""
        #: child frame id -> origin of the document it loaded ("" until seen)
        self.origins: dict[str, str] = {}

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.frameAttached" and params.get("parentFrameId"):
            self.origins.setdefault(str(params.get("frameId", "")), "")
        elif method == "Page.frameNavigated":
            frame = params.get("frame") or {}
            origin = _origin(str(frame.get("url", "")))
            if frame.get("id") == self.main_frame_id:
                self.main_origin = origin
            else:
                self.origins[str(frame.get("id", ""))] = origin

    @property
    def foreign(self) -> bool:
        """Whether a child frame loaded a document of another origin than the
        main frame's, or one this session did not see (another process)."""
        return any(origin != self.main_origin for origin in self.origins.values())
