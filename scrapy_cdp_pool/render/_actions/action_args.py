"""Checks of an action's argument values beyond their types, run when the
request is built (before any browser work): each raises ``ValueError``
saying what is wrong and what is allowed. See
:func:`~scrapy_cdp_pool.render._actions.actions.parse_actions`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_cdp_pool.render._actions.input_events import BUTTONS
from scrapy_cdp_pool.render._actions.keyboard import MODIFIERS, parse_combo
from scrapy_cdp_pool.settings.url_patterns import check_pattern

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._actions.action import Action

LOAD_STATES = ("load", "domcontentloaded", "networkidle")

#: the longest wait an action may be given, seconds (a day): an action's
#: ``timeout`` and ``wait_for_timeout``'s milliseconds above it are refused
#: (the request's ``download_timeout`` ends every action sooner anyway)
MAX_WAIT_S = 86_400.0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _at_least(action: Action, key: str, low: float, *, integer: bool = False) -> None:
    if key not in action.kwargs:
        return
    value = action.kwargs[key]
    if (integer and (isinstance(value, bool) or not isinstance(value, int))) or value < low:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{key}={value!r} must be {kind} >= {low:g}")


def _one_of(action: Action, key: str, allowed: tuple[str, ...], value: Any = None) -> None:
    value = action.kwargs.get(key) if value is None else value
    if value is not None and value not in allowed:
        raise ValueError(f"{key} {value!r} must be one of {', '.join(map(repr, allowed))}")


def wait_for_selector(action: Action) -> None:
    _one_of(action, "state", ("attached", "visible"))


def wait_for_timeout(action: Action) -> None:
    if not 0 <= action.args[0] <= MAX_WAIT_S * 1000:
        raise ValueError(
            f"{action.args[0]!r} milliseconds: must be >= 0 and at most {MAX_WAIT_S * 1000:g}"
        )


def wait_for_load_state(action: Action) -> None:
    _one_of(action, "state", LOAD_STATES, action.args[0] if action.args else None)


def press(action: Action) -> None:
    parse_combo(action.args[1])
    _at_least(action, "delay", 0)


def click(action: Action) -> None:
    _one_of(action, "button", tuple(BUTTONS))
    _at_least(action, "click_count", 1, integer=True)
    _at_least(action, "delay", 0)
    for name in action.kwargs.get("modifiers", ()):
        if name not in MODIFIERS:
            raise ValueError(f"modifier {name!r} must be one of {', '.join(map(repr, MODIFIERS))}")
    position = action.kwargs.get("position")
    if position is not None and (
        set(position) != {"x", "y"} or not all(_is_number(v) and v >= 0 for v in position.values())
    ):
        raise ValueError(f"position={position!r} must be {{'x': number >= 0, 'y': number >= 0}}")


def type_(action: Action) -> None:
    _at_least(action, "delay", 0)


def _strings_or_ints(key: str, value: Any, kind: type) -> None:
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        what = "a string" if kind is str else "an integer"
        raise ValueError(f"{key} {value!r} must be {what} or a list of them")


def select_option(action: Action) -> None:
    if len(action.args) > 1:
        _strings_or_ints("value", action.args[1], str)
    for key, kind in (("value", str), ("label", str), ("index", int)):
        if key in action.kwargs:
            _strings_or_ints(key, action.kwargs[key], kind)
    if len(action.args) < 2 and not {"value", "label", "index"} & set(action.kwargs):
        raise ValueError(
            "no option given: a value or label (or a list of them) after the selector, "
            "or value=, label=, index="
        )


def wait_for_function(action: Action) -> None:
    polling = action.kwargs.get("polling", "raf")
    if polling != "raf" and not (_is_number(polling) and polling > 0):
        raise ValueError(f"polling={polling!r} must be 'raf' or milliseconds > 0")
    try:
        json.dumps(action.kwargs.get("arg"))
    except (TypeError, ValueError) as e:
        raise ValueError(f"arg={action.kwargs['arg']!r} is not JSON ({e})") from e


def url_pattern(action: Action) -> None:
    check_pattern(action.args[0])
    _one_of(action, "wait_until", LOAD_STATES)


def goto(action: Action) -> None:
    url = action.args[0]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not an absolute http:// or https:// URL")
    _one_of(action, "wait_until", LOAD_STATES)


def scroll_until_stable(action: Action) -> None:
    _at_least(action, "stable_ms", 0)
    _at_least(action, "max_scrolls", 1, integer=True)
    _at_least(action, "max_ms", 0)


def screenshot(action: Action) -> None:
    kwargs = action.kwargs
    _one_of(action, "type", ("png", "jpeg"))
    if "quality" in kwargs:
        if kwargs.get("type", "png") != "jpeg":
            raise ValueError("quality is for type='jpeg' only (PNG is lossless)")
        _at_least(action, "quality", 0, integer=True)
        if kwargs["quality"] > 100:
            raise ValueError(f"quality={kwargs['quality']!r} must be 0 to 100")
    given: list[str] = [k for k in ("selector", "clip") if k in kwargs]
    if kwargs.get("full_page"):
        given.append("full_page")
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} exclude each other")
    clip = kwargs.get("clip")
    if clip is not None:
        if sorted(clip) != ["height", "width", "x", "y"] or not all(
            _is_number(v) for v in clip.values()
        ):
            raise ValueError(f"clip={clip!r} must be {{'x', 'y', 'width', 'height'}}: numbers")
        if clip["width"] <= 0 or clip["height"] <= 0:
            raise ValueError(f"clip={clip!r}: width and height must be > 0")
