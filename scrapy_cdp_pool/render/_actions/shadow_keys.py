"""Key events dispatched by script on an element inside a shadow root, where
the browser's own do not reach it.

``Input.dispatchKeyEvent`` on Lightpanda 1.0.2 goes to the outermost shadow
host (its ``document.activeElement``): the element's own key listeners never
run, so a Lit or web-component app's ``Enter`` did nothing. There, ``type``
and ``press`` dispatch each key on the focused
element by script instead, as the click fallback does for a hit test that
finds another element: ``keydown``, then for a key that types text
``keypress`` and the text inserted as trusted input (``Input.insertText``;
``Enter`` submits the element's form), then ``keyup``; the page sees the key
events with ``isTrusted`` false. A default prevented on ``keydown`` or
``keypress`` stops the text, as in a browser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_cdp_pool.render._actions.elements import js_template

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._actions.keyboard import Key
    from scrapy_cdp_pool.render._page.page import Page

#: seconds for one key's script (a page under load)
KEY_SCRIPT_TIMEOUT_S = 10.0

#: the element that has focus, through open shadow roots
_FOCUSED = """let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;"""

_IN_SHADOW_ROOT = "(() => { " + _FOCUSED + " return !!el && el.getRootNode() !== document; })()"

# keydown (then keypress for a key with text) or keyup on the focused
# element; 'insert' when the key's text is to be inserted
_KEY = (
    """(() => {
  const k = __KEY__;
  """
    + _FOCUSED
    + """
  if (!el) el = document.body;
  const make = (type) => {
    const e = new KeyboardEvent(type, {key: k.key, code: k.code, ctrlKey: k.ctrl, shiftKey: k.shift,
      altKey: k.alt, metaKey: k.meta, bubbles: true, cancelable: true, composed: true});
    for (const name of ['keyCode', 'which'])
      try { Object.defineProperty(e, name, {get: () => k.keyCode}); } catch (_) {}
    return e;
  };
  if (!k.down) { el.dispatchEvent(make('keyup')); return null; }
  if (!el.dispatchEvent(make('keydown')) || !k.text) return null;
  if (!el.dispatchEvent(make('keypress'))) return null;
  if (k.text !== '\\r') return 'insert';
  if (el.nodeName === 'INPUT' && el.form)
    el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
  return null;
})()"""
)


async def keys_by_script(page: Page) -> bool:
    """Whether this page's key events must be dispatched by script: its
    backend's do not reach into shadow roots and the focused element is in
    one."""
    if page.backend.keys_reach_shadow_roots:
        return False
    return bool(await page.evaluate(_IN_SHADOW_ROOT, KEY_SCRIPT_TIMEOUT_S))


async def key_by_script(page: Page, down: bool, key: Key, modifiers: int, text: str) -> None:
    """One key going ``down`` (typing ``text``, ``""`` for none) or up, with
    ``modifiers`` (CDP bits: Alt=1, Ctrl=2, Meta=4, Shift=8) held, dispatched on
    the focused element by script (see the module).

    :raises PageScriptError: the page's script threw.
    """
    value = {
        "key": key.key,
        "code": key.code,
        "keyCode": key.key_code,
        "down": down,
        "text": text,
        "alt": bool(modifiers & 1),
        "ctrl": bool(modifiers & 2),
        "meta": bool(modifiers & 4),
        "shift": bool(modifiers & 8),
    }
    script = js_template(_KEY, KEY=value)
    if await page.evaluate(script, KEY_SCRIPT_TIMEOUT_S) == "insert":
        await page.command("Input.insertText", {"text": text})
