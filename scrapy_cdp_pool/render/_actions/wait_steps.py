"""The actions that wait for the page or move it: ``wait_for_function``,
``wait_for_url``, ``wait_for_response`` and ``goto``
(docs/page-control.md). Names and arguments are Playwright's where it has them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.cdp import CDPProtocolError
from scrapy_cdp_pool.errors import NavigationFailed, PageScriptError
from scrapy_cdp_pool.render._actions.elements import in_page_ms, js_template, poll_in_page
from scrapy_cdp_pool.render._page.document import is_context_gone
from scrapy_cdp_pool.settings.url_patterns import matches_any

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._actions.action import Action
    from scrapy_cdp_pool.render._page.page import Page

# The expression goes in as code (it is the user's script, as for
# ``evaluate``): a function is called with ``arg`` at each poll, anything
# else is evaluated again at each poll.
_FUNCTION = """(async () => {
  const predicate = async (arg) => (/*EXPRESSION*/);
  const arg = __ARG__, polling = __POLLING__, deadline = Date.now() + __MS__;
  const next = () => new Promise(r => polling === 'raf'
    ? requestAnimationFrame(() => r()) : setTimeout(r, polling));
  for (;;) {
    let value = await predicate(arg);
    if (typeof value === 'function') value = await value(arg);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(__TIMED_OUT__ + 'no truthy value');
    await next();
  }
})()"""


async def wait_for_function(page: Page, action: Action, timeout_s: float) -> Any:
    """Poll the expression (``polling``: ``"raf"``, every animation frame,
    the default, or milliseconds) until it is truthy; return that value
    (JSON). A navigation meanwhile restarts the poll in the new document,
    as Playwright's does."""
    script = js_template(
        _FUNCTION,
        ARG=action.kwargs.get("arg"),
        POLLING=action.kwargs.get("polling", "raf"),
        MS=in_page_ms(timeout_s),
    ).replace("/*EXPRESSION*/", action.args[0], 1)
    # page.py imports the spec, which imports the actions: not at load time

    while True:
        generation = page.tracker.generation
        try:
            return await poll_in_page(page, script, timeout_s)
        except (CDPProtocolError, PageScriptError) as e:
            if page.tracker.generation == generation and not is_context_gone(e):
                raise
        await page.wait_settled("domcontentloaded", timeout_s)


async def wait_for_url(page: Page, action: Action, timeout_s: float) -> None:
    """Wait until the main frame's URL (``location.href``, same-document
    navigations included) matches the pattern, then until ``wait_until``
    (``"load"`` by default)."""
    pattern = action.args[0]
    state = action.kwargs.get("wait_until", "load")
    tracker = page.tracker
    while True:
        tracker.changed.clear()
        if matches_any((pattern,), page.frame_url):
            await page.wait_settled(state, timeout_s)
            if matches_any((pattern,), page.frame_url):
                return
            continue
        if tracker.crashed or page.too_large is not None:
            await page.wait_settled(state, timeout_s)  # raises by name
        await tracker.changed.wait()


async def wait_for_response(page: Page, action: Action, timeout_s: float) -> dict[str, Any]:
    """The first response whose URL matches the pattern, received since the
    previous action began (see :mod:`~scrapy_cdp_pool.render._page.response_log`),
    as ``{"url", "status", "method", "resource_type", "headers"}``."""
    if page.responses is None:  # the page makes one for a request with this action
        raise PageScriptError("no response log on this page")
    return await page.responses.wait_for(action.args[0])


async def goto(page: Page, action: Action, timeout_s: float) -> dict[str, Any] | None:
    """Navigate the page to the URL and wait for ``wait_until`` (``"load"``
    by default); return the final document's ``{"url", "status"}``, or
    ``None`` for a navigation within the document (as Playwright's).

    :raises NavigationFailed: the browser could not load the URL.
    """
    url = action.args[0]
    params: dict[str, Any] = {"url": url}
    if "referer" in action.kwargs:
        params["referrer"] = action.kwargs["referer"]
    tracker = page.tracker
    before = tracker.document
    tracker.navigation_pending = True
    answer = await page.command("Page.navigate", params, timeout_s)
    if answer.get("errorText") and tracker.document is before:
        tracker.navigation_pending = False
        raise NavigationFailed(url, str(answer["errorText"]))
    if not answer.get("loaderId") and tracker.document is before:
        tracker.navigation_pending = False  # within the document: nothing to load
        return None
    await page.wait_settled(action.kwargs.get("wait_until", "load"), timeout_s)
    document = tracker.document
    if document is None or document is before:
        raise NavigationFailed(url, tracker.failure or "no document")
    return {"url": document.url, "status": document.status}
