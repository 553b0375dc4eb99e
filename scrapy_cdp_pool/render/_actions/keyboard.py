"""Keys as ``Input.dispatchKeyEvent`` describes them: Playwright's US keyboard
layout (``usKeyboardLayout.ts``), reduced to the keys a form uses.

A key is named as Playwright names it: a character (``"a"``, ``"A"``, ``"!"``)
or a key name (``"Enter"``, ``"ArrowDown"``...), optionally with modifiers
(``"Control+A"``, ``"Shift+Tab"``). A leaf module: it imports nothing from the
package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    """One key: ``key`` (the DOM ``KeyboardEvent.key``), ``code`` (the
    physical key), ``key_code`` (Windows virtual key code, ``keyCode``),
    ``text`` (what typing it inserts, ``""`` for none)."""

    key: str
    code: str
    key_code: int
    text: str = ""


#: modifier name -> CDP ``modifiers`` bit (Alt=1, Ctrl=2, Meta=4, Shift=8)
MODIFIERS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}
MODIFIER_KEYS = {
    "Alt": Key("Alt", "AltLeft", 18),
    "Control": Key("Control", "ControlLeft", 17),
    "Meta": Key("Meta", "MetaLeft", 91),
    "Shift": Key("Shift", "ShiftLeft", 16),
}

_NAMED = {
    "Enter": Key("Enter", "Enter", 13, "\r"),
    "Tab": Key("Tab", "Tab", 9),
    "Backspace": Key("Backspace", "Backspace", 8),
    "Delete": Key("Delete", "Delete", 46),
    "Escape": Key("Escape", "Escape", 27),
    "ArrowLeft": Key("ArrowLeft", "ArrowLeft", 37),
    "ArrowUp": Key("ArrowUp", "ArrowUp", 38),
    "ArrowRight": Key("ArrowRight", "ArrowRight", 39),
    "ArrowDown": Key("ArrowDown", "ArrowDown", 40),
    "Home": Key("Home", "Home", 36),
    "End": Key("End", "End", 35),
    "PageUp": Key("PageUp", "PageUp", 33),
    "PageDown": Key("PageDown", "PageDown", 34),
    "Insert": Key("Insert", "Insert", 45),
    **MODIFIER_KEYS,
}

# (code, keyCode, unshifted, shifted) of the punctuation keys
_PUNCTUATION = (
    ("Minus", 189, "-", "_"),
    ("Equal", 187, "=", "+"),
    ("BracketLeft", 219, "[", "{"),
    ("BracketRight", 221, "]", "}"),
    ("Backslash", 220, "\\", "|"),
    ("Semicolon", 186, ";", ":"),
    ("Quote", 222, "'", '"'),
    ("Backquote", 192, "`", "~"),
    ("Comma", 188, ",", "<"),
    ("Period", 190, ".", ">"),
    ("Slash", 191, "/", "?"),
)


def _characters() -> dict[str, Key]:
    keys: dict[str, Key] = {" ": Key(" ", "Space", 32, " ")}
    for letter in "abcdefghijklmnopqrstuvwxyz":
        code = "Key" + letter.upper()
        keys[letter] = Key(letter, code, ord(letter.upper()), letter)
        keys[letter.upper()] = Key(letter.upper(), code, ord(letter.upper()), letter.upper())
    for digit, shifted in zip("0123456789", ")!@#$%^&*(", strict=True):
        keys[digit] = Key(digit, "Digit" + digit, ord(digit), digit)
        keys[shifted] = Key(shifted, "Digit" + digit, ord(digit), shifted)
    for code, key_code, plain, shifted in _PUNCTUATION:
        keys[plain] = Key(plain, code, key_code, plain)
        keys[shifted] = Key(shifted, code, key_code, shifted)
    keys["\n"] = keys["\r"] = _NAMED["Enter"]
    keys["\t"] = _NAMED["Tab"]
    return keys


CHARACTERS = _characters()
"""The characters typed as key presses (others are inserted as text, as
Playwright's ``keyboard.type`` does)."""


def parse_combo(combo: str) -> tuple[list[Key], Key | None, int]:
    """``"Control+Shift+A"`` -> (modifier keys, the key, the modifiers bits).
    A single character not in the layout is ``(mods, None, bits)``: inserted
    as text.

    :raises ValueError: an empty or unknown key name (names the key and the
        known ones).
    """
    if combo == "+" or combo.endswith("++"):  # the "+" key itself
        names, main = ([n for n in combo[:-2].split("+") if n] if combo != "+" else []), "+"
    else:
        *names, main = combo.split("+")
    if not main:
        raise ValueError(f"no key in {combo!r}")
    mods: list[Key] = []
    bits = 0
    for name in names:
        if name not in MODIFIERS:
            known = ", ".join(MODIFIERS)
            raise ValueError(f"unknown modifier {name!r} in {combo!r}; known: {known}")
        mods.append(MODIFIER_KEYS[name])
        bits |= MODIFIERS[name]
    key = _NAMED.get(main) or CHARACTERS.get(main)
    if key is not None:
        return mods, key, bits
    if len(main) == 1:
        return mods, None, bits
    raise ValueError(f"unknown key {main!r}; a key is one character or one of: {', '.join(_NAMED)}")
