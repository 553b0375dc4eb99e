"""The ``scroll_until_stable`` action (docs/page-control.md): the page is
scrolled with mouse-wheel input (``Input.dispatchMouseEvent``, type
``mouseWheel``) a screen at a time, as a reader (or Playwright's
``mouse.wheel``) scrolls it, so that every element passes through the
viewport and each lazy loader fires (an ``IntersectionObserver``, a
``scroll`` or ``wheel`` listener).

Before, the page jumped from its top to its bottom by script: the elements
in between never came into view (40 of 60 lazy images left unswapped, where
Playwright's wheel scrolling swapped all 60). Chromium only (Lightpanda has
no layout: the action is refused there before the page opens).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.errors import PageScriptError
from scrapy_cdp_pool.render._actions.elements import deep, js_template

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._actions.action import Action
    from scrapy_cdp_pool.render._page.page import Page

#: the most wheel steps of one pass down the page (a page taller than this
#: many screens is taken to its bottom by script from there)
MAX_WHEEL_STEPS = 200
#: how often the page's height and the selector's count are read, seconds
POLL_S = 0.05

# Two animation frames (a rendering update, with its IntersectionObserver
# checks, comes between two; a page that renders none goes on after 1 s),
# then where the page is.
_FRAMES_THEN_METRICS = """(async () => {
  const frame = () => new Promise(r => { requestAnimationFrame(() => r()); setTimeout(r, 1000); });
  await frame(); await frame();
  const root = document.scrollingElement || document.documentElement;
  return {y: scrollY, vh: innerHeight, vw: innerWidth, h: root.scrollHeight};
})()"""

# Where the wheel does not reach: the last element matching the selector
# into view (a feed in a scrolling box) and the document at its bottom.
_TO_BOTTOM = """(() => {
  const sel = __SEL__;
  const all = sel ? document.querySelectorAll(sel) : [];
  if (all.length) all[all.length - 1].scrollIntoView({block: 'end'});
  const root = document.scrollingElement || document.documentElement;
  window.scrollTo(0, root.scrollHeight);
})()"""

_MEASURE = """(() => {
  const sel = __SEL__;
  const root = document.scrollingElement || document.documentElement;
  return [root.scrollHeight, sel ? document.querySelectorAll(sel).length : 0];
})()"""


@dataclass
class _Run:
    """One ``scroll_until_stable``: its arguments and what it saw."""

    page: Page
    selector: str | None
    timeout_s: float
    scrolls: int = 0
    height: int = 0
    count: int = 0

    def result(self, stopped: str) -> dict[str, Any]:
        return {
            "scrolls": self.scrolls,
            "height": self.height,
            "count": self.count,
            "stopped": stopped,
        }

    async def evaluate(self, template: str) -> Any:
        script = deep(js_template(template, SEL=self.selector))
        return await self.page.evaluate(script, self.timeout_s)

    async def measure(self) -> tuple[int, int]:
        value = await self.evaluate(_MEASURE)
        if not isinstance(value, list) or len(value) != 2:
            raise PageScriptError(f"unexpected result {value!r}")
        return int(value[0]), int(value[1])

    async def wheel(self, metrics: dict[str, Any], delta_y: float) -> dict[str, Any]:
        """One mouse-wheel turn at the viewport's centre, then two frames;
        where the page is then."""
        await self.page.command(
            "Input.dispatchMouseEvent",
            {
                "type": "mouseWheel",
                "x": float(metrics["vw"]) / 2,
                "y": float(metrics["vh"]) / 2,
                "deltaX": 0,
                "deltaY": delta_y,
            },
            self.timeout_s,
        )
        return await self.metrics()

    async def metrics(self) -> dict[str, Any]:
        value = await self.evaluate(_FRAMES_THEN_METRICS)
        if not isinstance(value, dict):
            raise PageScriptError(f"unexpected result {value!r}")
        return value

    async def scroll(self) -> None:
        """Up one screen (a sentinel at the bottom leaves the viewport),
        then down a screen at a time to the bottom the page had when the
        scroll began (what it loads meanwhile is for the next scroll, so
        ``max_scrolls`` bounds what loads). Where the wheel does not move
        the document (it scrolls a box under the pointer) or past
        :data:`MAX_WHEEL_STEPS` screens, the last element matching the
        selector and the document's bottom are brought into view by script."""
        metrics = await self.metrics()
        bottom = float(metrics["h"])  # as it was: what loads meanwhile is the next scroll's
        metrics = await self.wheel(metrics, -float(metrics["vh"]))
        for _ in range(MAX_WHEEL_STEPS):
            if metrics["y"] + metrics["vh"] >= bottom - 1:
                return  # there by the wheel: nothing skipped
            moved = await self.wheel(metrics, 0.8 * float(metrics["vh"]))
            if moved["y"] <= metrics["y"]:  # the wheel scrolls another box here
                break
            metrics = moved
        await self.evaluate(_TO_BOTTOM)


async def scroll_until_stable(page: Page, action: Action, timeout_s: float) -> dict[str, Any]:
    """Scroll to the bottom with the mouse wheel (see the module), and again
    after each growth, until neither the page's height nor the count of the
    optional selector's elements grew for ``stable_ms`` (default 1000) after
    a scroll and after one more scroll (not counted); at most
    ``max_scrolls`` scrolls (default 50) and ``max_ms`` milliseconds
    (default: the action's timeout, which fails it).

    :returns: ``{"scrolls", "height", "count", "stopped"}``, ``stopped``
        being ``"stable"``, ``"max_scrolls"`` or ``"max_ms"``.
    :raises TimeoutError: still growing at the action's timeout.
    """
    kwargs = action.kwargs
    stable_s = float(kwargs.get("stable_ms", 1000)) / 1000
    max_scrolls = int(kwargs.get("max_scrolls", 50))
    max_ms = kwargs.get("max_ms")
    loop = asyncio.get_running_loop()
    started = loop.time()
    run = _Run(page, action.args[0] if action.args else None, timeout_s)
    run.height, run.count = await run.measure()
    await run.scroll()
    run.scrolls, nudged, since = 1, False, loop.time()
    while True:
        await asyncio.sleep(POLL_S)
        height, count = await run.measure()
        if height > run.height or count > run.count:
            run.height, run.count = max(height, run.height), max(count, run.count)
            nudged = False
            if run.scrolls >= max_scrolls:
                return run.result("max_scrolls")
            await run.scroll()
            run.scrolls, since = run.scrolls + 1, loop.time()
            continue
        if loop.time() - since >= stable_s:
            if nudged:
                return run.result("stable")
            await run.scroll()  # once more, not counted: then it is stable
            nudged, since = True, loop.time()
            continue
        if max_ms is not None and loop.time() - started >= float(max_ms) / 1000:
            return run.result("max_ms")
        if loop.time() - started > timeout_s:
            raise TimeoutError(
                f"still growing after {run.scrolls} scrolls ({run.count} elements, height "
                f"{run.height} px): raise timeout or set max_ms"
            )
