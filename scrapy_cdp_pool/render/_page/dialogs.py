"""JavaScript dialogs (``alert``, ``confirm``, ``prompt``, ``beforeunload``):
answered the moment they open, as Playwright does by default (it dismisses
them), so that no page waits behind one.

Chromium blocks the page's JavaScript, and so every later command to it, until
a dialog is answered (``Page.javascriptDialogOpening`` →
``Page.handleJavaScriptDialog``). Lightpanda reports the dialog and dismisses
it itself (``confirm`` returns ``false``, ``prompt`` ``null``): it cannot
accept one, and says so with a warning once per process.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.cdp import CDPError

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page_handle import PageHandle

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.dialogs")


class DialogAnswerer:
    """Answers one page's dialogs and keeps what it saw.

    ``accept``: accept (``confirm`` → ``true``, ``prompt`` → its default
    text) instead of dismissing. ``browser_answers``: the browser already
    dismissed the dialog (Lightpanda); nothing is sent.

    :attr:`seen` lists ``{"type", "message", "accepted"}`` dicts in the
    order the dialogs opened (``response.meta["cdp_dialogs_seen"]``).
    """

    def __init__(self, page: PageHandle, *, accept: bool, browser_answers: bool) -> None:
        self.page = page
        self.accept = accept and not browser_answers
        self.browser_answers = browser_answers
        self.seen: list[dict[str, Any]] = []
        #: the page is being left by the plugin itself (a kept page stopped at
        #: ``about:blank``): a ``beforeunload`` dialog is then accepted, unseen,
        #: as no fresh context would have run it (dismissing it cancelled that
        #: navigation, and the page kept its handler for the next request,
        #: whose navigation it aborted: ``net::ERR_ABORTED``)
        self.leaving = False

    async def on_opening(self, params: dict[str, Any]) -> None:
        """Answer the dialog ``params`` (``Page.javascriptDialogOpening``)
        describes. Never raises: a page that went away needs no answer."""
        kind = str(params.get("type", "alert"))
        # the plugin's own leave of a kept page: accepted, not the page's to show
        leaving = self.leaving and kind == "beforeunload"
        accept = leaving or self.accept
        if not leaving:
            self.seen.append(
                {"type": kind, "message": str(params.get("message", "")), "accepted": accept}
            )
            logger.debug(
                "%s: %s dialog %r %s",
                self.page.spec.url,
                kind,
                params.get("message"),
                "accepted" if accept else "dismissed",
            )
        if self.browser_answers:
            return
        answer: dict[str, Any] = {"accept": accept}
        if accept and kind == "prompt":
            answer["promptText"] = str(params.get("defaultPrompt", ""))
        try:
            await self.page.command("Page.handleJavaScriptDialog", answer)
        except CDPError as e:
            logger.debug("%s: answering a %s dialog: %s", self.page.spec.url, kind, e)


class RefusedAcceptWarning:
    """Warns once (per crawl: one per renderer) that a backend which answers
    dialogs itself (Lightpanda dismisses them) was asked to accept them."""

    def __init__(self) -> None:
        self._warned = False

    def check(self, accept: bool, browser_answers: bool, extra: dict[str, Any]) -> None:
        if not accept or not browser_answers or self._warned:
            return
        self._warned = True
        logger.warning(
            "Lightpanda dismisses every JavaScript dialog itself: CDP_POOL_DIALOGS / "
            "meta['cdp_dialogs'] = 'accept' is not honoured there (confirm() returns false, "
            "prompt() null; response.meta['cdp_dialogs_seen'] says accepted=False); "
            "use Chromium to accept dialogs",
            extra=extra,
        )
