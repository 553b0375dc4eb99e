"""Main-frame navigations to schemes the browser does not load as a page
(``mailto:``, ``tel:``, an application's ``myapp://``, ``file:``...).

Chromium starts such a navigation, then drops it (``net::ERR_ABORTED``,
sometimes after the load event, or only schedules it for ``file:``); Lightpanda
replaces the document with an empty one for ``file:``. Either way no
main-document response ever comes, and a render waiting for one held its
connection until its deadline. :class:`SchemeFilter` keeps these navigation
events from the document tracker: the render ends with the last http(s)
document, and the URLs are listed in ``response.meta["cdp_ignored_navigations"]``.
If the browser did replace the document (Lightpanda and ``file:``), the render
fails with :class:`~scrapy_cdp_pool.errors.NavigationToOtherScheme`.
"""

from __future__ import annotations

from typing import Any

#: schemes whose navigations the render follows (``about:blank`` included)
FOLLOWED = ("http:", "https:", "about:")

#: the events announcing a navigation of a frame
NAVIGATION_EVENTS = frozenset(
    {
        "Page.frameStartedNavigating",
        "Page.frameRequestedNavigation",
        "Page.frameScheduledNavigation",
    }
)


def followed(url: str) -> bool:
    """Whether a navigation to ``url`` loads a page the render can return."""
    return url.lower().startswith(FOLLOWED)


class SchemeFilter:
    """Watches one page's main frame (``main_frame_id``)."""

    def __init__(self, main_frame_id: str) -> None:
        self.main_frame_id = main_frame_id
        #: URLs of main-frame navigations not followed, first seen first
        self.ignored: list[str] = []
        #: the non-http(s) URL the main frame now shows, if the browser did
        #: replace the document
        self.left_for: str | None = None
        #: loader (request) ids of the navigations not followed
        self._loaders: set[str] = set()

    def stopped_loading(self, method: str, params: dict[str, Any]) -> bool:
        """True when the event ends a navigation not followed
        (``Network.loadingFailed``, ``net::ERR_ABORTED``). Chromium stops
        loading the current document when such a navigation starts while it
        loads (an inline ``location = "mailto:..."``): its load event never
        comes, and the document is as loaded as it will ever be."""
        return method == "Network.loadingFailed" and params.get("requestId") in self._loaders

    def swallow(self, method: str, params: dict[str, Any]) -> bool:
        """True when the event is about a navigation the render must not wait
        for (it is recorded, not passed on)."""
        if method in NAVIGATION_EVENTS:
            url = str(params.get("url", ""))
            if params.get("frameId") != self.main_frame_id or not url or followed(url):
                return False
            if url not in self.ignored:
                self.ignored.append(url)
            if params.get("loaderId"):
                self._loaders.add(str(params["loaderId"]))
            return True
        if method == "Page.frameNavigated":
            frame = params.get("frame") or {}
            url = str(frame.get("url", ""))
            # Only a navigation the page asked for: Chromium shows its own
            # error pages (chrome-error://) for failed documents, a 407 too.
            if frame.get("id") == self.main_frame_id and url in self.ignored:
                self.left_for = url
        return False
