"""The ``screenshot`` action: the viewport, the full page, an element
(``selector``) or a rectangle (``clip``), as PNG or JPEG (``quality``), with
Playwright's option names (an element's is its ``locator.screenshot()``)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.render._actions.elements import deep, in_page_ms, js_template, poll_in_page

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._actions.action import Action
    from scrapy_cdp_pool.render._page.page import Page

# The element's box in document coordinates, once it is visible, scrolled
# into view first when it is outside the viewport.
_ELEMENT_BOX = """(async () => {
  const sel = __SEL__, deadline = Date.now() + __MS__;
  for (;;) {
    const el = document.querySelector(sel);
    let r = el && el.getBoundingClientRect();
    if (r && r.width && r.height) {
      if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) {
        el.scrollIntoView({block: 'center', inline: 'center'});
        r = el.getBoundingClientRect();
      }
      return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height};
    }
    if (Date.now() > deadline)
      throw new Error(__TIMED_OUT__ + (el ? sel + ' is not visible' : 'no element matches ' + sel));
    await new Promise(r => setTimeout(r, 50));
  }
})()"""
_ELEMENT_BOX = deep(_ELEMENT_BOX)

_SCROLL_OFFSET = "({x: scrollX, y: scrollY})"


async def screenshot(page: Page, action: Action, timeout_s: float) -> bytes:
    """``Page.captureScreenshot``: ``type`` ``"png"`` (default) or
    ``"jpeg"`` with ``quality`` 0-100; ``full_page``; ``selector``: the first
    matching element's box (waited for until visible, scrolled into view);
    ``clip``: ``{"x", "y", "width", "height"}`` in CSS pixels from the
    viewport's top-left (as Playwright's). Returns the image's bytes."""
    kwargs = action.kwargs
    params: dict[str, Any] = {"format": kwargs.get("type", "png")}
    if "quality" in kwargs:
        params["quality"] = kwargs["quality"]
    if kwargs.get("full_page"):
        params["captureBeyondViewport"] = True
    clip = None
    if "selector" in kwargs:
        script = js_template(_ELEMENT_BOX, SEL=kwargs["selector"], MS=in_page_ms(timeout_s))
        clip = await poll_in_page(page, script, timeout_s)
    elif "clip" in kwargs:
        offset = await page.evaluate(_SCROLL_OFFSET, timeout_s)
        clip = dict(kwargs["clip"])
        clip["x"] += offset["x"]
        clip["y"] += offset["y"]
    if clip is not None:
        params["clip"] = {**clip, "scale": 1}
        params["captureBeyondViewport"] = True
    result = await page.command("Page.captureScreenshot", params, timeout_s)
    return base64.b64decode(result["data"])
