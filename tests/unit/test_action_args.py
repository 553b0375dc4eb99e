"""Bad arguments of the page actions are refused by name when the request is
built, before any browser work (issue 18 item 4): ``parse_actions`` and the
value checks of render/_actions/action_args.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from scrapy_cdp_pool.render._actions.actions import parse_actions

BAD: list[tuple[Any, str]] = [
    (["hover"], "'hover': takes 1 positional argument(s), got 0"),
    (["hover", "#a", {"force": True}], "'hover': unknown keyword 'force'"),
    (["type", "#a", 5], "'type': argument 1 5 has the wrong type (expected str)"),
    (["type", "#a", "x", {"delay": -1}], "'type': delay=-1 must be a number >= 0"),
    (["type", "#a", "x", {"delay": True}], "'type': keyword delay=True has the wrong type"),
    (["press", "#a", "Entr"], "'press': unknown key 'Entr'"),
    (["press", "#a", "Ctrl+a"], "'press': unknown modifier 'Ctrl'"),
    (["select_option", "#s"], "'select_option': no option given"),
    (["select_option", "#s", ["a", 1]], "'select_option': value ['a', 1] must be a string"),
    (["select_option", "#s", {"index": "1"}], "index='1' has the wrong type (expected int or"),
    (["select_option", "#s", {"index": [True]}], "index [True] must be an integer or a list"),
    (["select_option", "#s", "a", "b"], "'select_option': takes 1 positional argument(s) (and 1"),
    (["check", "#c", {"timeout": "5"}], "'check': keyword timeout='5' has the wrong type"),
    (["uncheck"], "'uncheck': takes 1 positional argument(s), got 0"),
    (["wait_for_function", "x", {"polling": 0}], "polling=0 must be 'raf' or milliseconds > 0"),
    (["wait_for_function", "x", {"polling": "mutation"}], "polling='mutation' must be 'raf'"),
    (["wait_for_function", "x", {"arg": {1, 2}}], "'wait_for_function': arg={1, 2} is not JSON"),
    (["wait_for_url", "re:("], "'wait_for_url': 're:(' is not a valid regex"),
    (["wait_for_url", "*", {"wait_until": "commit"}], "wait_until 'commit' must be one of"),
    (["wait_for_response", ""], "'wait_for_response': '' is not a URL pattern"),
    (["goto", "/relative"], "'goto': '/relative' is not an absolute http:// or https:// URL"),
    (["goto", "file:///etc/passwd"], "'goto': 'file:///etc/passwd' is not an absolute http"),
    (["scroll_until_stable", {"max_scrolls": 0}], "max_scrolls=0 must be an integer >= 1"),
    (["scroll_until_stable", {"max_scrolls": 2.5}], "keyword max_scrolls=2.5 has the wrong type"),
    (["scroll_until_stable", {"stable_ms": -5}], "stable_ms=-5 must be a number >= 0"),
    (["screenshot", {"quality": 50}], "quality is for type='jpeg' only"),
    (["screenshot", {"type": "jpeg", "quality": 101}], "quality=101 must be 0 to 100"),
    (["screenshot", {"type": "webp"}], "type 'webp' must be one of 'png', 'jpeg'"),
    (["screenshot", {"selector": "#a", "full_page": True}], "selector and full_page exclude"),
    (["screenshot", {"clip": {"x": 0, "y": 0, "width": 0, "height": 5}}], "width and height"),
    (["screenshot", {"clip": {"x": 0, "y": 0}}], "clip={'x': 0, 'y': 0} must be"),
    (["wait_for_load_state", "idle"], "state 'idle' must be one of"),
    (["wait_for_selector", "#a", {"state": "hidden"}], "state 'hidden' must be one of"),
    (["click", "#a", {"button": "back"}], "'click': button 'back' must be one of 'left'"),
    (["click", "#a", {"click_count": 0}], "'click': click_count=0 must be an integer >= 1"),
    (["click", "#a", {"modifiers": ["Ctrl"]}], "'click': modifier 'Ctrl' must be one of 'Alt'"),
    (["click", "#a", {"position": {"x": 1}}], "'click': position={'x': 1} must be {'x': number"),
    (["click", "#a", {"force": True}], "'click': unknown keyword 'force'"),
    (["wait_for_timeout", 1e308], "1e+308 milliseconds: must be >= 0 and at most 8.64e+07"),
    (["wait_for_timeout", float("nan")], "nan milliseconds: must be >= 0"),
]


@pytest.mark.parametrize(("action", "message"), BAD, ids=[repr(a) for a, _ in BAD])
def test_bad_arguments_are_refused_by_name(action: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        parse_actions([["wait_for_timeout", 1], action])
    assert str(raised.value).startswith("action #1 "), raised.value


def test_good_arguments_pass() -> None:
    actions = parse_actions([
        ["hover", "#a"], ["type", "#a", "x", {"delay": 5}], ["press", "#a", "Control+Shift+A"],
        ["press", "#a", "+"], ["press", "#a", "é"], ["select_option", "#s", ["a", "b"]],
        ["select_option", "#s", {"index": 0, "label": ["x"]}], ["check", "#c"], ["uncheck", "#c"],
        ["wait_for_function", "() => 1", {"arg": {"k": [1]}, "polling": 100}],
        ["wait_for_url", "re:/x$", {"wait_until": "networkidle"}], ["wait_for_response", "*/api"],
        ["goto", "https://example.com/", {"referer": "https://example.org/"}],
        ["scroll_until_stable"], ["scroll_until_stable", ".c", {"max_scrolls": 3, "max_ms": 500}],
        ["screenshot", {"type": "jpeg", "quality": 0, "clip": {"x": 0, "y": 0, "width": 1,
                                                               "height": 1.5}}],
        ["screenshot", {"selector": "#a"}],
    ])  # fmt: skip
    assert len(actions) == 17


@pytest.mark.parametrize("timeout", [-5, 0, float("nan"), float("inf"), 1e308, 86_401])
def test_an_action_timeout_must_be_seconds_above_zero(timeout: float) -> None:
    with pytest.raises(ValueError, match=r"action #0 'wait_for_selector': timeout=.*seconds > 0"):
        parse_actions([["wait_for_selector", ".product", {"timeout": timeout}]])
