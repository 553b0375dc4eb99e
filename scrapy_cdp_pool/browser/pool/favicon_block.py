"""Chromium's own ``/favicon.ico`` requests, failed on the browser's session.

Chromium (``/usr/bin/chromium``; the headless shell asks for none) asks each
site for ``/favicon.ico`` after a page without a declared icon loads: a request
the page did not make and plain Scrapy does not send. Each page's ``Fetch``
patterns fail it (``render/_page/page_setup.fetch_params``), but only while
the page's session is attached: one Chromium starts just as a fresh context is
disposed left unintercepted (measured, raw CDP loop on 20 fresh contexts: 6
failed by the page, 8 reached the site). The embedded Chromium's browser
session therefore has the same pattern too (``Fetch.enable`` without a session
pauses the requests of every target): in the same loop, the page's pattern
failed 3, the browser's 2, and none reached the site.

Only on a browser the crawl started (its pipe), and only when its pages are
fresh contexts (``CDP_POOL_REUSE_PAGES = False``) on a Chromium that asks for
favicons: on a remote endpoint the browser session's pattern would fail the
favicons of other clients' pages; with kept pages (the default) it cost 58 ms
of browser CPU a page (see :func:`needs_browser_block`),
and a kept page's own pattern fails its favicon. The fresh contexts a crawl of
kept pages still opens (a request with init scripts, or a profile's state saved
back) have the page's pattern only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy_cdp_pool.browser.cdp import CDPConnection, CDPError

logger = logging.getLogger(__name__)

FAVICON_URL_PATTERN = "*/favicon.ico"
"""The URLs of the favicon a browser asks for by itself (``Fetch`` pattern)."""

FAVICON_FETCH_PATTERN: dict[str, str] = {
    "urlPattern": FAVICON_URL_PATTERN,
    "resourceType": "Other",  # a page's <img> or fetch() of it is not one
    "requestStage": "Request",
}
"""The ``Fetch.enable`` pattern of the browser's own favicon requests."""


def is_favicon(params: dict[str, Any]) -> bool:
    """Whether a ``Fetch.requestPaused`` event's request is for
    ``/favicon.ico`` (query and fragment aside)."""
    url = str(params.get("request", {}).get("url", ""))
    return url.split("?", 1)[0].split("#", 1)[0].endswith("/favicon.ico")


def needs_browser_block(reuse_pages: bool | None, version: dict[str, Any]) -> bool:
    """Whether an embedded Chromium gets the browser session's favicon
    pattern: its crawl's pages are fresh contexts (``reuse_pages``:
    ``CDP_POOL_REUSE_PAGES``, ``None`` meaning Chromium's default, kept pages)
    and it asks for favicons (``version``: its ``Browser.getVersion`` answer;
    the headless shell's ``product`` is ``HeadlessChrome/...`` and asks for
    none). Only then is the pattern worth its cost: on kept pages it cost 58 ms
    of browser CPU a page on ``/usr/bin/chromium`` (457 -> 515,
    ``benchmarks/paired.py``, 3 rounds of 60 pages), none measurable with
    fresh contexts (1,324 -> 1,304, ``--fresh-contexts``, 2 rounds of 40)."""
    product = str(version.get("product", ""))
    return reuse_pages is False and not product.startswith("HeadlessChrome/")


class BrowserFaviconBlock:
    """Fails the favicon requests paused on a browser session
    (:meth:`install`), counted in :attr:`blocked` (added to
    ``cdp_pool/favicon_requests_blocked`` at close)."""

    def __init__(self) -> None:
        #: favicon requests failed on the browser session, over every browser
        #: the crawl started (restarts included)
        self.blocked = 0
        self._answers: set[asyncio.Task[None]] = set()

    async def install(self, cdp: CDPConnection) -> None:
        """Take ``cdp``'s browser-level events and pause its favicon requests.

        :raises CDPError: the browser refused ``Fetch.enable`` or closed."""
        cdp.subscribe(None, lambda method, params: self._on_event(cdp, method, params))
        await cdp.send("Fetch.enable", {"patterns": [FAVICON_FETCH_PATTERN]})

    def _on_event(self, cdp: CDPConnection, method: str, params: dict[str, Any]) -> None:
        if method != "Fetch.requestPaused":
            return
        request_id = params["requestId"]
        if is_favicon(params):
            self.blocked += 1
            answer = cdp.post(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
            )
        else:  # not matched by the pattern: let it go as asked
            answer = cdp.post("Fetch.continueRequest", {"requestId": request_id})
        task = asyncio.ensure_future(_answered(answer))
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)


async def _answered(answer: Any) -> None:
    """Wait for a command's answer; the request may be gone already (its
    context disposed) or the browser closed: nothing to do then."""
    try:
        await answer
    except CDPError as e:
        logger.debug("favicon request not failed: %s", e)
