"""The actions that wait for the page or move it: ``wait_for_function``,
``wait_for_url``, ``wait_for_response``, ``goto`` and ``scroll_until_stable``
(docs/page-control.md). Names and arguments are Playwright's where it has them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.cdp import CDPProtocolError
from scrapy_cdp_pool.errors import NavigationFailed, PageScriptError
from scrapy_cdp_pool.render._actions.elements import deep, in_page_ms, js_template, poll_in_page
from scrapy_cdp_pool.render._page.document import is_context_gone
from scrapy_cdp_pool.settings.url_patterns import matches_any

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._actions.actions import Action
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


_SCROLL = """(async () => {
  const sel = __SEL__, stableMs = __STABLE__, maxScrolls = __MAX_SCROLLS__, maxMs = __MAX_MS__;
  const t0 = Date.now(), deadline = t0 + __MS__;
  const root = () => document.scrollingElement || document.documentElement;
  // An animation frame (a rendering update, with its IntersectionObserver
  // checks, comes between two); a page that renders none goes on after 1 s.
  const frame = () => new Promise(r => { requestAnimationFrame(() => r()); setTimeout(r, 1000); });
  const measure = () => [root().scrollHeight, sel ? document.querySelectorAll(sel).length : 0];
  let [height, count] = measure(), scrolls = 0, nudged = false, since = 0;
  // Up one screen, two frames, to the bottom (and the last element into
  // view): an IntersectionObserver (or a scroll listener) sees its target
  // leave the viewport, then come back.
  const scroll = async () => {
    window.scrollBy(0, -innerHeight); await frame(); await frame();
    const all = sel ? document.querySelectorAll(sel) : [];
    if (all.length) all[all.length - 1].scrollIntoView({block: 'end'});
    window.scrollTo(0, root().scrollHeight);
    since = Date.now();
  };
  await scroll(); scrolls++;
  for (;;) {
    await new Promise(r => setTimeout(r, 50));
    const [h, n] = measure();
    const result = stopped => ({scrolls, height, count, stopped});
    if (h > height || n > count) {
      height = Math.max(h, height); count = Math.max(n, count); nudged = false;
      if (scrolls >= maxScrolls) return result('max_scrolls');
      await scroll(); scrolls++;
      continue;
    }
    if (Date.now() - since >= stableMs) {
      if (nudged) return result('stable');
      await scroll(); nudged = true;  // once more, not counted: then it is stable
      continue;
    }
    if (maxMs !== null && Date.now() - t0 >= maxMs) return result('max_ms');
    if (Date.now() > deadline) throw new Error(__TIMED_OUT__ + 'still growing after ' + scrolls
      + ' scrolls (' + count + ' elements, height ' + height + ' px): raise timeout or set max_ms');
  }
})()"""
_SCROLL = deep(_SCROLL)


async def scroll_until_stable(page: Page, action: Action, timeout_s: float) -> dict[str, Any]:
    """Scroll to the bottom (and the last element matching the optional
    selector into view, for a feed in a scrolling box), and again after each
    growth, until neither the page's height nor the count of the selector's
    elements grew for ``stable_ms`` (default 1000) after a scroll and after
    one more scroll (not counted); at most ``max_scrolls`` scrolls (default
    50) and ``max_ms`` milliseconds (default: the action's timeout, which
    fails it). Each scroll goes up one screen and, two animation frames
    later, to the bottom, so that an ``IntersectionObserver`` sees its
    sentinel come into view again.

    :returns: ``{"scrolls", "height", "count", "stopped"}``, ``stopped``
        being ``"stable"``, ``"max_scrolls"`` or ``"max_ms"``.
    """
    kwargs = action.kwargs
    script = js_template(
        _SCROLL,
        SEL=action.args[0] if action.args else None,
        STABLE=kwargs.get("stable_ms", 1000),
        MAX_SCROLLS=kwargs.get("max_scrolls", 50),
        MAX_MS=kwargs.get("max_ms"),
        MS=in_page_ms(timeout_s),
    )
    result = await poll_in_page(page, script, timeout_s)
    if not isinstance(result, dict):
        raise PageScriptError(f"unexpected result {result!r}")
    return result
