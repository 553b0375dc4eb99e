"""parse_actions: ``meta["cdp_actions"]`` checked against the allow-list."""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_cdp_pool.render._actions.actions import ACTIONS, parse_actions


def test_actions_parse_with_positional_and_keyword_arguments() -> None:
    actions = parse_actions(
        [
            ["wait_for_selector", "#list p", {"timeout": 5}],
            "scroll_to_bottom",
            ("fill", "#q", "shoes"),
            ["wait_for_load_state"],
            ["wait_for_load_state", "networkidle"],
            ["screenshot", {"full_page": True}],
        ]
    )
    assert [a.name for a in actions] == [
        "wait_for_selector",
        "scroll_to_bottom",
        "fill",
        "wait_for_load_state",
        "wait_for_load_state",
        "screenshot",
    ]
    assert actions[0].args == ("#list p",)
    assert actions[0].kwargs == {"timeout": 5}
    assert actions[2].args == ("#q", "shoes")
    assert actions[4].args == ("networkidle",)
    assert actions[0].describe() == "wait_for_selector['#list p']"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("click", r"expected a list of \[name, \*args\] lists"),
        ([["teleport", "#a"]], r"action #0: unknown action 'teleport'; allowed: wait_for_selector"),
        ([["click"]], r"action #0 'click': takes 1 positional argument\(s\), got 0"),
        ([["scroll_to_bottom"], ["fill", "#a"]], r"action #1 'fill': takes 2 positional"),
        ([[]], r"action #0: expected \[name, \*args\]"),
        ([[3, "#a"]], r"action #0: expected \[name, \*args\]"),
    ],
)
def test_a_bad_action_is_refused_by_position_and_name(raw: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_actions(raw)


@pytest.mark.parametrize(
    "raw",
    [
        [["click", 3]],
        [["wait_for_timeout", "soon"]],
        [["click", "#a", {"timeout": "slow"}]],
        [["click", "#a", {"colour": "red"}]],
    ],
)
def test_mistyped_or_unknown_arguments_are_refused(raw: Any) -> None:
    with pytest.raises(ValueError, match=r"action #0 'click'|action #0 'wait_for_timeout'"):
        parse_actions(raw)


def test_every_allowed_action_parses_with_its_own_arguments() -> None:
    samples: dict[type, Any] = {str: "x", bool: True}
    # Those whose values are checked further (render/_actions/action_args.py).
    own = {"goto": ["https://example.com/"], "select_option": ["#s", "x"]}
    for name, signature in ACTIONS.items():
        args = own.get(name) or [
            samples.get(kind, 1) if isinstance(kind, type) else 1 for kind in signature.positional
        ]
        assert parse_actions([[name, *args]])[0].name == name
