"""Scripts that find elements and poll the page for the actions: templates
filled with JSON values, a poll that gives up in the page in time to say why,
``run_on_element`` and ``wait_for_selector``.

A poll in the page stops :data:`IN_PAGE_MARGIN_S` (or a quarter of the action's
timeout, if longer) before the action's own deadline and throws an error
marked as a timeout; :func:`poll_in_page` raises it as :class:`TimeoutError`
with the page's reason (``no element matches #x``, ``... is not visible``), so
an action that runs out of time fails as a timeout (as it always did), now
saying what it was waiting for.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.errors import PageScriptError
from scrapy_cdp_pool.render._actions.deep_selector import DEEP_QUERY, DEEP_QUERY_ALL

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page import Page

IN_PAGE_MARGIN_S = 0.5

#: what a poll in the page puts before its reason when its time is up
TIMED_OUT = "[cdp-pool timed out] "


def js_template(template: str, **values: Any) -> str:
    """``template`` with each ``__NAME__`` replaced by ``values[NAME]`` as a
    JavaScript literal (JSON), in one pass (a value is never read as a
    placeholder). ``__TIMED_OUT__`` is :data:`TIMED_OUT`."""
    values.setdefault("TIMED_OUT", TIMED_OUT)
    return re.sub(r"__([A-Z_]+?)__", lambda m: json.dumps(values[m.group(1)]), template)


def in_page_ms(timeout_s: float) -> int:
    """Milliseconds a poll in the page may run: the action's whole timeout,
    as Playwright's waits (its reason comes back within :func:`report_grace_s`)."""
    return max(0, int(timeout_s * 1000))


def report_grace_s(timeout_s: float) -> float:
    """Seconds past an action's timeout for a poll's reason to come back from
    a page under load, before the action is cut short without it."""
    return max(IN_PAGE_MARGIN_S, timeout_s / 4)


async def poll_in_page(page: Page, script: str, timeout_s: float) -> Any:
    """Evaluate a polling ``script`` (one that throws ``__TIMED_OUT__ + why``
    when its time is up) and return its value.

    :raises TimeoutError: the poll's time was up (the page's reason).
    :raises PageScriptError: the script threw anything else.
    """
    try:
        return await page.evaluate(script, timeout_s + report_grace_s(timeout_s))
    except PageScriptError as e:
        text = str(e)
        if TIMED_OUT in text:
            raise TimeoutError(text.split(TIMED_OUT, 1)[1]) from e
        raise


def deep(script: str) -> str:
    """``script`` with its ``document.querySelector``/``querySelectorAll``
    calls piercing open shadow roots as Playwright's CSS engine does
    (:mod:`~scrapy_cdp_pool.render._actions.deep_selector`)."""
    script = script.replace("document.querySelectorAll(", DEEP_QUERY_ALL + "(")
    return script.replace("document.querySelector(", DEEP_QUERY + "(")


async def run_on_element(page: Page, selector: str, script: str, timeout_s: float) -> Any:
    """Run ``script`` with ``el`` bound to the first element matching
    ``selector``.

    :raises PageScriptError: no element matches, or the script threw.
    """
    sel = json.dumps(selector)
    expression = deep(
        f"(() => {{ const el = document.querySelector({sel});"
        f" if (!el) throw new Error('no element matches ' + {sel}); {script}; }})()"
    )
    return await page.evaluate(expression, timeout_s)


_WAIT_FOR_SELECTOR = """(async () => {
  const sel = __SEL__, visible = __VISIBLE__, deadline = Date.now() + __MS__;
  for (;;) {
    const el = document.querySelector(sel);
    if (el && (!visible || el.getClientRects().length > 0)) return true;
    if (Date.now() > deadline)
      throw new Error(__TIMED_OUT__ + (el ? sel + ' is not visible' : 'no element matches ' + sel));
    await new Promise(r => setTimeout(r, 50));
  }
})()"""
_WAIT_FOR_SELECTOR = deep(_WAIT_FOR_SELECTOR)


async def wait_for_selector(page: Page, selector: str, *, visible: bool, timeout_s: float) -> None:
    """Wait until an element matches ``selector`` (and has a layout box
    when ``visible``), checking every 50 ms in the page.

    :raises TimeoutError: not found in time (saying which selector).
    """
    script = js_template(
        _WAIT_FOR_SELECTOR, SEL=selector, VISIBLE=visible, MS=in_page_ms(timeout_s)
    )
    await poll_in_page(page, script, timeout_s)
