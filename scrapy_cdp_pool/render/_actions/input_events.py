"""Trusted input, as Playwright sends it: mouse events at an element's centre
(``Input.dispatchMouseEvent``, after scrolling it into view) and key events to
the focused element (``Input.dispatchKeyEvent``, ``Input.insertText``). The
page sees them with ``isTrusted`` true, as a user's.

Before a mouse event, :func:`element_point` waits, as Playwright's
actionability checks do, until the element exists, is visible (a non-empty
box, not ``visibility: hidden``), enabled (for clicks), has held the same box
for two animation frames, and is the element hit at its centre
(``document.elementFromPoint``). Lightpanda has no real layout: each element
gets a made-up box, and the hit test at its centre usually finds it; where it
finds another element, the event is dispatched on the element by script
instead (``isTrusted`` false), never at another element: see the README's
"Page actions".
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.backends import Capability
from scrapy_cdp_pool.render._actions.elements import deep, in_page_ms, js_template, poll_in_page
from scrapy_cdp_pool.render._actions.keyboard import (
    CHARACTERS,
    MODIFIER_KEYS,
    MODIFIERS,
    Key,
    parse_combo,
)
from scrapy_cdp_pool.render._actions.shadow_keys import key_by_script

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page import Page

_POINT = """(async () => {
  const sel = __SEL__, deadline = Date.now() + __MS__, needHit = __HIT__, needEnabled = __ENABLED__;
  const pos = __POS__;
  const frame = () => new Promise(r => { requestAnimationFrame(() => r()); setTimeout(r, 50); });
  const name = n => !n ? 'nothing' : n.nodeName.toLowerCase() + (n.id ? '#' + n.id : '');
  let why = 'no element matches ' + sel, last = null;
  for (;;) {
    const el = document.querySelector(sel);
    if (el) {
      let r = el.getBoundingClientRect();
      if (!el.getClientRects().length || !r.width || !r.height
          || getComputedStyle(el).visibility === 'hidden') {
        why = name(el) + ' (' + sel + ') is not visible'; last = null;
      } else if (needEnabled && el.disabled) {
        why = name(el) + ' (' + sel + ') is disabled';
      } else {
        if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) {
          el.scrollIntoView({block: 'center', inline: 'center'});
          r = el.getBoundingClientRect();
        }
        // a position is from the padding box's top-left corner (Playwright's)
        const x = r.left + (pos ? el.clientLeft + pos.x : r.width / 2);
        const y = r.top + (pos ? el.clientTop + pos.y : r.height / 2);
        const box = [r.left, r.top, r.width, r.height].join();
        if (box !== last) {
          last = box; why = name(el) + ' (' + sel + ') keeps moving';
        } else {
          // the deepest element there, through open shadow roots (the
          // document's answer is the shadow host)
          let at = document.elementFromPoint(x, y);
          while (at && at.shadowRoot && typeof at.shadowRoot.elementFromPoint === 'function') {
            const inner = at.shadowRoot.elementFromPoint(x, y);
            if (!inner || inner === at) break;
            at = inner;
          }
          // a browser that answers with the host alone: el inside that host's tree
          let host = el.getRootNode && el.getRootNode().host;
          while (host && host !== at) host = host.getRootNode().host;
          if (at && (at === el || el.contains(at) || host === at)) return {x, y, hit: true};
          if (!needHit) return {x, y, hit: false};
          why = name(at) + ' would receive the event instead of ' + name(el) + ' (' + sel + ')';
        }
      }
    }
    if (Date.now() > deadline) throw new Error(__TIMED_OUT__ + why);
    await frame();
  }
})()"""
_POINT = deep(_POINT)


def has_layout(page: Page) -> bool:
    """Whether the page's browser lays pages out (hit tests are real)."""
    return page.backend.can(Capability.LAYOUT)


async def element_point(
    page: Page,
    selector: str,
    timeout_s: float,
    *,
    enabled: bool = False,
    position: dict[str, float] | None = None,
) -> tuple[float, float] | None:
    """The viewport point (CSS pixels) at the centre of the first element
    matching ``selector`` (or at ``position``, ``{"x", "y"}`` in CSS pixels
    from the top-left corner of its padding box, as Playwright's), once it is
    actionable (see the module). ``None`` on a browser without layout when
    the hit test there finds another element (the caller dispatches on the
    element by script).

    :raises TimeoutError: not actionable in time, naming why (no element,
        not visible, disabled, covered by another element).
    """
    script = js_template(
        _POINT,
        SEL=selector,
        MS=in_page_ms(timeout_s),
        HIT=has_layout(page),
        ENABLED=enabled,
        POS=position,
    )
    point = await poll_in_page(page, script, timeout_s)
    if not point["hit"]:
        return None
    return float(point["x"]), float(point["y"])


async def _mouse(page: Page, kind: str, x: float, y: float, **extra: Any) -> None:
    await page.command("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})


async def mouse_move(page: Page, x: float, y: float) -> None:
    await _mouse(page, "mouseMoved", x, y, button="none")


#: ``Input.dispatchMouseEvent``'s ``buttons`` bit of each button
BUTTONS = {"left": 1, "right": 2, "middle": 4}


async def mouse_click(
    page: Page,
    x: float,
    y: float,
    *,
    button: str = "left",
    click_count: int = 1,
    delay_ms: float = 0,
    modifiers: tuple[str, ...] = (),
) -> None:
    """Move to ``(x, y)``, then press and release ``button`` there
    ``click_count`` times (the n-th press and release say ``clickCount`` n,
    as Playwright's: a double click is two), ``delay_ms`` between each press
    and its release, with ``modifiers`` (``"Alt"``, ``"Control"``, ``"Meta"``,
    ``"Shift"``) held down as keys around the clicks. Without a delay the
    commands go in one write: a session's commands are handled in order."""
    held = 0
    for name in modifiers:
        held |= MODIFIERS[name]
        await _key(page, True, MODIFIER_KEYS[name], held)
    try:
        bit = BUTTONS[button]
        common = {"button": button, "modifiers": held}
        sends = [_mouse(page, "mouseMoved", x, y, button="none", modifiers=held)]
        for count in range(1, click_count + 1):
            sends.append(
                _mouse(page, "mousePressed", x, y, buttons=bit, clickCount=count, **common)
            )
            if delay_ms:
                await asyncio.gather(*sends)
                sends = []
                await asyncio.sleep(delay_ms / 1000)
            sends.append(_mouse(page, "mouseReleased", x, y, buttons=0, clickCount=count, **common))
        await asyncio.gather(*sends)
    finally:  # never leave a key held for the page's next action
        for name in reversed(modifiers):
            held &= ~MODIFIERS[name]
            await _key(page, False, MODIFIER_KEYS[name], held)


async def _key(
    page: Page, down: bool, key: Key, modifiers: int, text: str = "", by_script: bool = False
) -> None:
    if by_script:
        await key_by_script(page, down, key, modifiers, text)
        return
    params: dict[str, Any] = {
        "type": "keyUp",
        "modifiers": modifiers,
        "key": key.key,
        "code": key.code,
        "windowsVirtualKeyCode": key.key_code,
        "location": 0,
    }
    if down:
        params.update(
            type="keyDown" if text else "rawKeyDown",
            text=text,
            unmodifiedText=text,
            autoRepeat=False,
            isKeypad=False,
        )
    await page.command("Input.dispatchKeyEvent", params)


async def press_key(
    page: Page, combo: str, delay_ms: float = 0, *, by_script: bool = False
) -> None:
    """Press ``combo`` (``"Enter"``, ``"a"``, ``"Control+A"``: see
    :func:`~scrapy_cdp_pool.render._actions.keyboard.parse_combo`) on the focused
    element: modifiers down, the key down, ``delay_ms`` later the key up,
    modifiers up. A character outside the layout is inserted as text
    (``Input.insertText``). A key with Alt, Control or Meta held types no
    text (as Playwright's). ``by_script``: the key events dispatched on the
    focused element by script (:mod:`~scrapy_cdp_pool.render._actions.shadow_keys`).

    :raises ValueError: an unknown key name.
    """
    modifier_keys, key, modifiers = parse_combo(combo)
    held = 0
    for modifier in modifier_keys:
        held |= MODIFIERS[modifier.key]
        await _key(page, True, modifier, held, by_script=by_script)
    if key is None:
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        await page.command("Input.insertText", {"text": combo[-1]})
    else:
        text = "" if modifiers & 7 else key.text
        await _key(page, True, key, modifiers, text, by_script)
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        await _key(page, False, key, modifiers, by_script=by_script)
    for modifier in reversed(modifier_keys):
        held &= ~MODIFIERS[modifier.key]
        await _key(page, False, modifier, held, by_script=by_script)


async def type_text(page: Page, text: str, delay_ms: float = 0, *, by_script: bool = False) -> None:
    """Type ``text`` into the focused element key by key, as Playwright's
    ``keyboard.type``: a character of the layout is a key press (down,
    ``delay_ms``, up), any other is inserted as text after ``delay_ms``.
    ``by_script``: as :func:`press_key`'s."""
    for char in text:
        key = CHARACTERS.get(char)
        if key is None:
            if delay_ms:
                await asyncio.sleep(delay_ms / 1000)
            await page.command("Input.insertText", {"text": char})
            continue
        await _key(page, True, key, 0, key.text, by_script)
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        await _key(page, False, key, 0, by_script=by_script)


_FOCUS = """(async () => {
  const sel = __SEL__, deadline = Date.now() + __MS__;
  for (;;) {
    const el = document.querySelector(sel);
    if (el) { el.focus(); return document.activeElement === el; }
    if (Date.now() > deadline) throw new Error(__TIMED_OUT__ + 'no element matches ' + sel);
    await new Promise(r => setTimeout(r, 50));
  }
})()"""
_FOCUS = deep(_FOCUS)


async def focus(page: Page, selector: str, timeout_s: float) -> None:
    """Focus the first element matching ``selector`` once there is one (as
    Playwright's ``type`` and ``press`` do, by script).

    :raises TimeoutError: no element in time.
    """
    script = js_template(_FOCUS, SEL=selector, MS=in_page_ms(timeout_s))
    await poll_in_page(page, script, timeout_s)
