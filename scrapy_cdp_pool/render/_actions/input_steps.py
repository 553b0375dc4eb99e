"""The actions that act on an element as a user would: ``click``, ``hover``,
``type``, ``press``, ``fill``, ``select_option``, ``check``, ``uncheck`` (docs/page-control.md).

Clicks, hovers and keys are trusted input events (see
:mod:`~scrapy_cdp_pool.render._actions.input_events`); ``fill`` selects the field's
text and inserts the value as trusted text (``Input.insertText``: an
``input`` event, no keys), as Playwright's does; ``select_option`` sets the
options and fires ``input`` and ``change`` by script, as Playwright's does.
An action that may start a navigation waits for it (:meth:`Page.settle`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.errors import PageScriptError
from scrapy_cdp_pool.render._actions.elements import (
    deep,
    in_page_ms,
    js_template,
    poll_in_page,
    run_on_element,
    wait_for_selector,
)
from scrapy_cdp_pool.render._actions.input_events import (
    element_point,
    focus,
    mouse_click,
    mouse_move,
    press_key,
    type_text,
)
from scrapy_cdp_pool.render._actions.shadow_keys import keys_by_script

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._actions.action import Action
    from scrapy_cdp_pool.render._page.page import Page

# Lightpanda, where the hit test found another element: the events a user's
# hover fires, dispatched on the element by script.
_HOVER_BY_SCRIPT = (
    "for (const [t, b] of [['mouseover', true], ['mouseenter', false], ['mousemove', true]])"
    " el.dispatchEvent(new MouseEvent(t, {bubbles: b, cancelable: b, composed: b}))"
)


async def click_element(
    page: Page, selector: str, timeout_s: float, options: dict[str, Any] | None = None
) -> None:
    """A trusted click at the element's centre (or ``options["position"]``)
    once it is actionable; ``options``: Playwright's ``button``,
    ``click_count``, ``delay`` (ms), ``modifiers`` (see
    :func:`~scrapy_cdp_pool.render._actions.input_events.mouse_click`). Where a
    browser without layout hits another element there, a plain left click is
    sent by script (``el.click()``).

    :raises PageScriptError: that fallback, with other options.
    """
    options = options or {}
    point = await element_point(
        page, selector, timeout_s, enabled=True, position=options.get("position")
    )
    if point is not None:
        await mouse_click(
            page,
            *point,
            button=options.get("button", "left"),
            click_count=int(options.get("click_count", 1)),
            delay_ms=float(options.get("delay", 0)),
            modifiers=tuple(options.get("modifiers", ())),
        )
    elif set(options) - {"position"}:
        raise PageScriptError(
            f"{selector}: the browser's hit test finds another element there (no layout), "
            f"so only a plain click can be sent by script, not one with {sorted(options)}"
        )
    else:
        await run_on_element(page, selector, "el.click()", timeout_s)


#: ``click``'s options, as Playwright's ``page.click`` names them
CLICK_OPTIONS = ("button", "click_count", "delay", "modifiers", "position")


async def click(page: Page, action: Action, timeout_s: float) -> None:
    options = {k: v for k, v in action.kwargs.items() if k in CLICK_OPTIONS}
    await click_element(page, action.args[0], timeout_s, options)
    await page.settle(timeout_s)


async def hover(page: Page, action: Action, timeout_s: float) -> None:
    point = await element_point(page, action.args[0], timeout_s)
    if point is None:
        await run_on_element(page, action.args[0], _HOVER_BY_SCRIPT, timeout_s)
    else:
        await mouse_move(page, *point)


async def type_(page: Page, action: Action, timeout_s: float) -> None:
    await focus(page, action.args[0], timeout_s)
    by_script = await keys_by_script(page)
    await type_text(page, action.args[1], float(action.kwargs.get("delay", 0)), by_script=by_script)
    await page.settle(timeout_s)


# Playwright's fill (injectedScript.fill): the input types whose value is set
# by script (no text to select), else the field's text is selected for the
# inserted text to replace; anything else is not fillable.
_FILL_PREPARE = """(async () => {
  const sel = __SEL__, value = __VALUE__, deadline = Date.now() + __MS__;
  const set = new Set(['color', 'date', 'time', 'datetime-local', 'month', 'range', 'week']);
  const kinds = new Set(['', 'email', 'number', 'password', 'search', 'tel', 'text', 'url']);
  for (;;) {
    const el = document.querySelector(sel);
    if (el) {
      if (el.nodeName === 'INPUT') {
        const type = (el.getAttribute('type') || '').toLowerCase();
        if (set.has(type)) {
          el.focus(); el.value = value;
          if (el.value !== value) throw new Error('malformed value for ' + sel);
          el.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
          el.dispatchEvent(new Event('change', {bubbles: true}));
          return 'set';
        }
        if (!kinds.has(type))
          throw new Error(sel + ' is an input of type ' + type + ': not fillable');
      } else if (el.nodeName !== 'TEXTAREA' && !el.isContentEditable) {
        throw new Error(sel + ' is not an <input>, <textarea> or contenteditable element');
      }
      if (el.disabled) throw new Error(sel + ' is disabled');
      if (el.readOnly) throw new Error(sel + ' is read-only');
      el.focus();
      if (el.nodeName === 'INPUT' || el.nodeName === 'TEXTAREA') el.select();
      else {
        const range = document.createRange(); range.selectNodeContents(el);
        const selection = window.getSelection();
        selection.removeAllRanges(); selection.addRange(range);
      }
      return 'selected';
    }
    if (Date.now() > deadline) throw new Error(__TIMED_OUT__ + 'no element matches ' + sel);
    await new Promise(r => setTimeout(r, 50));
  }
})()"""
_FILL_PREPARE = deep(_FILL_PREPARE)


async def fill(page: Page, action: Action, timeout_s: float) -> None:
    """Playwright's ``fill``: the field's text replaced by the value as
    trusted inserted text (an empty value: the selection deleted with a
    ``Delete`` key); date-like inputs set by script.

    :raises PageScriptError: the element is not fillable (names why).
    :raises TimeoutError: no element in time.
    """
    selector, value = action.args[0], action.args[1]
    script = js_template(_FILL_PREPARE, SEL=selector, VALUE=value, MS=in_page_ms(timeout_s))
    if await poll_in_page(page, script, timeout_s) == "selected":
        if value:
            await page.command("Input.insertText", {"text": value})
        else:
            await press_key(page, "Delete", 0)
    await page.settle(timeout_s)


async def press(page: Page, action: Action, timeout_s: float) -> None:
    await focus(page, action.args[0], timeout_s)
    by_script = await keys_by_script(page)
    await press_key(page, action.args[1], float(action.kwargs.get("delay", 0)), by_script=by_script)
    await page.settle(timeout_s)


_SELECT = """(async () => {
  const sel = __SEL__, wanted = __WANTED__, deadline = Date.now() + __MS__;
  const fits = (o, i, w) => ('any' in w ? o.value === w.any || o.label === w.any : true)
    && ('value' in w ? o.value === w.value : true) && ('label' in w ? o.label === w.label : true)
    && ('index' in w ? i === w.index : true);
  let why = 'no element matches ' + sel;
  for (;;) {
    const el = document.querySelector(sel);
    if (el) {
      if (el.nodeName !== 'SELECT') throw new Error(sel + ' is not a <select> element');
      const options = Array.from(el.options);
      let remaining = wanted.slice();
      const chosen = [];
      options.forEach((o, i) => {
        if (!remaining.length || !remaining.some(w => fits(o, i, w))) return;
        chosen.push(o);
        remaining = el.multiple ? remaining.filter(w => !fits(o, i, w)) : [];
      });
      if (el.disabled) why = sel + ' is disabled';
      else if (remaining.length)
        why = 'no option of ' + sel + ' matches ' + JSON.stringify(remaining);
      else {
        for (const o of options) o.selected = false;
        for (const o of chosen) o.selected = true;
        el.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
        el.dispatchEvent(new Event('change', {bubbles: true}));
        return options.filter(o => o.selected).map(o => o.value);
      }
    }
    if (Date.now() > deadline) throw new Error(__TIMED_OUT__ + why);
    await new Promise(r => setTimeout(r, 50));
  }
})()"""
_SELECT = deep(_SELECT)


def select_wanted(action: Action) -> list[dict[str, Any]]:
    """The options ``select_option`` asks for, as Playwright's matchers: a
    positional string (or list) matches an option's value or label;
    ``value=``, ``label=`` and ``index=`` (each one or a list) match that
    property alone."""
    wanted: list[dict[str, Any]] = []
    if action.args[1:]:
        wanted.extend({"any": v} for v in _as_list(action.args[1]))
    for key in ("value", "label", "index"):
        if key in action.kwargs:
            wanted.extend({key: v} for v in _as_list(action.kwargs[key]))
    return wanted


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


async def select_option(page: Page, action: Action, timeout_s: float) -> list[str]:
    script = js_template(
        _SELECT, SEL=action.args[0], WANTED=select_wanted(action), MS=in_page_ms(timeout_s)
    )
    result = await poll_in_page(page, script, timeout_s)
    await page.settle(timeout_s)
    return list(result or [])


_STATE = """(() => {
  const el = document.querySelector(__SEL__);
  if (!el) throw new Error('no element matches ' + __SEL__);
  if (el.nodeName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio'))
    return {checked: el.checked, radio: el.type === 'radio'};
  const role = el.getAttribute('role');
  if (role === 'checkbox' || role === 'radio')
    return {checked: el.getAttribute('aria-checked') === 'true', radio: role === 'radio'};
  throw new Error(__SEL__ + ' is not a checkbox or radio button');
})()"""
_STATE = deep(_STATE)


async def _wait_attached(page: Page, selector: str, timeout_s: float) -> None:
    """Wait until an element matches ``selector``."""
    await wait_for_selector(page, selector, visible=False, timeout_s=timeout_s)


async def _set_checked(page: Page, selector: str, checked: bool, timeout_s: float) -> None:
    """Playwright's ``check``/``uncheck``: nothing if the state is already
    the wanted one, else a click, after which the state must be the wanted
    one.

    :raises PageScriptError: not a checkbox or radio button, a radio button
        to uncheck, or the click did not change the state.
    """
    await _wait_attached(page, selector, timeout_s)
    script = js_template(_STATE, SEL=selector)
    state = await page.evaluate(script, timeout_s)
    if state["checked"] == checked:
        return
    if state["radio"] and not checked:
        raise PageScriptError(
            f"cannot uncheck radio button {selector}: a radio button is unchecked by "
            "checking another one of its group"
        )
    await click_element(page, selector, timeout_s)
    await page.settle(timeout_s)
    state = await page.evaluate(script, timeout_s)
    if state["checked"] != checked:
        raise PageScriptError(f"clicking {selector} did not change its state")


async def check(page: Page, action: Action, timeout_s: float) -> None:
    await _set_checked(page, action.args[0], True, timeout_s)


async def uncheck(page: Page, action: Action, timeout_s: float) -> None:
    await _set_checked(page, action.args[0], False, timeout_s)
