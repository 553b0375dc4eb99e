"""A profile's storage state read back from its browser context, for
``CDP_POOL_PROFILE_SAVE_STATE``: the context's cookies and the page origin's
localStorage, merged into the profile's other origins, as a Playwright
``storageState`` (``{"cookies": [...], "origins": [{"origin", "localStorage":
[{"name", "value"}]}]}``).

A render reads it at its end (:func:`render_state`). A live page
(``meta["cdp_include_page"]``) reads it when the page is closed
(:class:`LiveState`): what the callback did to the page counts.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.errors import CDPError, CDPProtocolError, LivePageFailed
from scrapy_cdp_pool.render._request.context_options import ContextOptions, playwright_cookie
from scrapy_cdp_pool.render._request.cookies import cap_stored_cookies, stored_keys

if TYPE_CHECKING:
    from scrapy_cdp_pool.browser.cdp import CDPConnection
    from scrapy_cdp_pool.render._page.page import Page

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.storage_state")

#: the current document's origin and its localStorage items, as a
#: ``{"origin", "items": [{"name", "value"}]}`` value
LOCAL_STORAGE_SCRIPT = (
    "(() => { let items = []; try { items = Object.entries(localStorage)"
    ".map(([name, value]) => ({name, value})); } catch (e) {}"
    " return {origin: location.origin, items}; })()"
)


def local_storage_of(value: Any) -> tuple[str, list[dict[str, str]]]:
    """``(origin, items)`` from :data:`LOCAL_STORAGE_SCRIPT`'s value
    (``("", [])`` for anything else)."""
    if not isinstance(value, dict):
        return "", []
    return str(value.get("origin") or ""), list(value.get("items") or [])


def merged_state(
    options: ContextOptions,
    cdp_cookies: list[dict[str, Any]],
    origin: str,
    items: list[dict[str, str]],
) -> dict[str, Any]:
    """The ``storageState``: ``cdp_cookies`` (CDP ``Network.Cookie`` objects)
    and ``origin``'s ``items``, replacing that origin's entry among the
    profile's origins (an opaque ``"null"`` or empty origin is not stored).
    The cookies are kept within a browser's caps
    (:func:`~scrapy_cdp_pool.render._request.cookies.cap_stored_cookies`),
    with a WARNING naming the profile when some are left out."""
    origins = [
        {"origin": o, "localStorage": [{"name": k, "value": v} for k, v in kv]}
        for o, kv in options.local_storage
        if o != origin
    ]
    if origin and origin != "null":
        origins.append({"origin": origin, "localStorage": items})
    cookies = cap_stored_cookies(
        options.name, [playwright_cookie(c) for c in cdp_cookies], stored_keys(options.cookies)
    )
    return {"cookies": cookies, "origins": origins}


async def render_state(
    cdp: CDPConnection,
    context_id: str | None,
    page: Page,
    options: ContextOptions,
    timeout_s: float,
) -> dict[str, Any]:
    """The state at a render's end. The page is closed first: Lightpanda
    exports a context's storage only then."""
    origin: str = ""
    items: list[dict[str, str]] = []
    if page.tracker.document is not None and page.tracker.document.body is None:
        origin, items = local_storage_of(await page.evaluate(LOCAL_STORAGE_SCRIPT, timeout_s))
    await cdp.send("Target.closeTarget", {"targetId": page.target_id}, timeout_s=timeout_s)
    result = await cdp.send(
        "Storage.getCookies", {"browserContextId": context_id}, timeout_s=timeout_s
    )
    return merged_state(options, list(result.get("cookies", [])), origin, items)


class LiveState:
    """A live page's state, read when the page is closed: its localStorage
    just before the page goes (:meth:`before_close`, which the relay awaits
    before it passes on the callback's ``page.close()``), then the context's
    cookies (:meth:`read`). ``timeout_s`` bounds each CDP command."""

    def __init__(
        self,
        cdp: CDPConnection,
        context_id: str,
        target_id: str,
        options: ContextOptions,
        timeout_s: float,
    ) -> None:
        self.cdp = cdp
        self.context_id = context_id
        self.target_id = target_id
        self.options = options
        self.timeout_s = timeout_s
        #: ``(origin, items)`` once read
        self.local_storage: tuple[str, list[dict[str, str]]] | None = None

    async def before_close(self) -> None:
        """Read the page's localStorage, on a CDP session of its own (once).

        :raises CDPError: the page did not answer."""
        if self.local_storage is not None:
            return
        attached = await self.cdp.send(
            "Target.attachToTarget",
            {"targetId": self.target_id, "flatten": True},
            timeout_s=self.timeout_s,
        )
        session = str(attached["sessionId"])
        try:
            result = await self.cdp.send(
                "Runtime.evaluate",
                {"expression": LOCAL_STORAGE_SCRIPT, "returnByValue": True},
                session,
                self.timeout_s,
            )
        finally:
            await self.cdp.send(
                "Target.detachFromTarget", {"sessionId": session}, timeout_s=self.timeout_s
            )
        self.local_storage = local_storage_of((result.get("result") or {}).get("value"))

    async def read(self) -> dict[str, Any]:
        """The state: the localStorage read before the close (read now if
        the page is still open, and the page closed), then the context's
        cookies.

        :raises CDPError: the browser did not answer.
        :raises LivePageFailed: the page was closed before its localStorage
            could be read (it would be lost)."""
        if self.local_storage is None:
            with contextlib.suppress(CDPError):  # the page is gone: said below
                await self.before_close()
        with contextlib.suppress(CDPProtocolError):  # closed already
            await self.cdp.send(
                "Target.closeTarget", {"targetId": self.target_id}, timeout_s=self.timeout_s
            )
        if self.local_storage is None:
            raise LivePageFailed("the page was closed before its localStorage could be read")
        result = await self.cdp.send(
            "Storage.getCookies", {"browserContextId": self.context_id}, timeout_s=self.timeout_s
        )
        origin, items = self.local_storage
        return merged_state(self.options, list(result.get("cookies", [])), origin, items)
