"""Actions that act on elements (issue 18 item 4): ``click``, ``hover``,
``type``, ``press``, ``select_option``, ``check``, ``uncheck``, on both
embedded backends, against the test site's ``/act/input`` page, which records
every event it sees (type, target, ``isTrusted``, key, value) and sends the
record to the site; the tests assert what the site was told."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.profiles import token
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = ["lightpanda", "chromium"]
REPORT = ["evaluate", "report()"]


def reports(site: SiteServer, key: str) -> list[Any]:
    with urllib.request.urlopen(site.url(f"/act/reports?key={key}"), timeout=10) as response:
        value: list[Any] = json.loads(response.read())
        return value


async def seen_by_site(
    site: SiteServer, browser: str, actions: list[Any]
) -> tuple[list[list[Any]], scrapy.http.Response]:
    """Run ``actions`` on /act/input, then report; return the events the
    page sent to the site and the response."""
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/input?key={key}"),
                        meta={"cdp": True, "cdp_actions": [*actions, REPORT]})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    assert not spider.failures, spider.failures[0].value
    [events] = reports(site, key)
    return events, spider.responses[0]


def of(events: list[list[Any]], *types: str) -> list[list[Any]]:
    return [e for e in events if e[0] in types]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_click_is_a_trusted_mouse_click_on_the_element(
    site: SiteServer, browser: str
) -> None:
    events, _ = await seen_by_site(site, browser, [["click", "#btn"]])
    clicks = of(events, "mousedown", "mouseup", "click")
    assert [(e[0], e[1], e[2]) for e in clicks] == [
        ("mousedown", "btn", True),
        ("mouseup", "btn", True),
        ("click", "btn", True),
    ]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_hover_moves_a_trusted_mouse_over_the_element_without_clicking(
    site: SiteServer, browser: str
) -> None:
    events, _ = await seen_by_site(site, browser, [["hover", "#hov"]])
    on_target = [(e[0], e[2]) for e in events if e[1] == "hov"]
    assert ("mouseover", True) in on_target
    assert ("mouseenter", True) in on_target
    assert ("mousemove", True) in on_target
    assert not of(events, "mousedown", "mouseup", "click")


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_type_sends_trusted_keys_in_order_with_a_delay(
    site: SiteServer, browser: str
) -> None:
    text = "Ab1 é!"
    events, response = await seen_by_site(
        site,
        browser,
        [
            ["type", "#txt", text, {"delay": 20}],
            ["evaluate", "document.getElementById('txt').value"],
        ],
    )
    keys = of(events, "keydown", "keyup")
    # Every character of the layout is a key press: down, then up, one at a time;
    # "é" is not on the US layout: inserted as text (an input event, no key).
    assert [(e[0], e[3]) for e in keys] == [(t, c) for c in "Ab1 !" for t in ("keydown", "keyup")]
    assert all(e[1] == "txt" and e[2] is True for e in keys)
    inputs = of(events, "input")
    assert [e[4] for e in inputs] == ["A", "Ab", "Ab1", "Ab1 ", "Ab1 é", text]
    assert all(e[2] is True for e in inputs)
    assert response.meta["cdp_results"][1] == text


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_press_enter_is_a_trusted_key(site: SiteServer, browser: str) -> None:
    events, _ = await seen_by_site(site, browser, [["press", "#txt", "Enter"]])
    assert [(e[0], e[1], e[2], e[3]) for e in of(events, "keydown", "keyup")] == [
        ("keydown", "txt", True, "Enter"),
        ("keyup", "txt", True, "Enter"),
    ]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_typing_then_pressing_enter_submits_the_form_as_a_user_would(
    site: SiteServer, browser: str
) -> None:
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/form?key={key}"), meta={"cdp": True, "cdp_actions": [
            ["type", "#q", "hello you"], ["press", "#q", "Enter"]]})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    assert not spider.failures, spider.failures[0].value
    response = spider.responses[0]
    assert response.url == site.url(f"/act/next?key={key}&q=hello+you")
    assert response.css("#next::text").get() == "next"
    assert reports(site, key) == [{"next": site.url(f"/act/form?key={key}")}]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_select_option_by_value_label_and_index(site: SiteServer, browser: str) -> None:
    events, response = await seen_by_site(
        site,
        browser,
        [
            ["select_option", "#sel", "Banana"],  # a label
            ["select_option", "#sel", {"value": "c"}],
            ["select_option", "#multi", ["x", "Zed"]],
            ["select_option", "#multi", {"index": [1]}],
        ],
    )
    changes = [(e[1], e[4]) for e in of(events, "change")]
    assert changes == [("sel", "b"), ("sel", "c"), ("multi", ["x", "z"]), ("multi", ["y"])]
    assert [e[1] for e in of(events, "input")] == ["sel", "sel", "multi", "multi"]
    assert response.meta["cdp_results"][:4] == [["b"], ["c"], ["x", "z"], ["y"]]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_check_and_uncheck_click_only_when_the_state_differs(
    site: SiteServer, browser: str
) -> None:
    events, _ = await seen_by_site(
        site,
        browser,
        [["check", "#cb"], ["check", "#cb"], ["uncheck", "#cb"], ["check", "#r2"]],
    )
    clicks = [(e[1], e[2], e[4]) for e in of(events, "click")]
    # The second check finds it checked: no click.
    assert clicks == [("cb", True, True), ("cb", True, False), ("r2", True, True)]
    assert [(e[1], e[4]) for e in of(events, "change")] == [
        ("cb", True), ("cb", False), ("r2", True)
    ]  # fmt: skip


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_unchecking_a_radio_button_fails_by_name(site: SiteServer, browser: str) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/input?key={token()}"), meta={"cdp": True, "cdp_actions": [
            ["check", "#r1"], ["uncheck", "#r1"]]})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    [failure] = spider.failures
    message = str(failure.value)
    assert "action #1" in message
    assert "cannot uncheck radio button #r1" in message


#: selector -> why a click on it times out
NOT_ACTIONABLE = {
    "#under": "div#overlay would receive the event instead of button#under (#under)",
    "#hidden": "button#hidden (#hidden) is not visible",
    "#absent": "no element matches #absent",
}


@pytest_twisted.ensureDeferred
async def test_a_click_waits_for_an_actionable_element_then_fails_naming_why_on_chromium(
    site: SiteServer,
) -> None:
    """The three ways in one crawl, each its own page (three crawls before,
    each waiting out the same 4 s action timeout)."""
    urls = {selector: site.url(f"/act/covered?{token()}") for selector in NOT_ACTIONABLE}
    spider, _ = await crawl(
        [scrapy.Request(urls[selector], meta={"cdp": True, "cdp_actions": [
            ["click", selector, {"timeout": 4}]]}) for selector in NOT_ACTIONABLE],
        {"CDP_POOL_BROWSER": "chromium"},
    )  # fmt: skip
    failed = {failure.request.url: str(failure.value) for failure in spider.failures}
    assert sorted(failed) == sorted(urls.values())
    for selector, why in NOT_ACTIONABLE.items():
        message = failed[urls[selector]]
        assert f"action #0 click['{selector}'] timed out: {why}" in message, message


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_where_lightpanda_hits_another_element_the_event_goes_to_the_element_by_script(
    site: SiteServer, browser: str
) -> None:
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/misplaced?key={key}"), meta={"cdp": True, "cdp_actions": [
            ["click", "#target"], ["hover", "#target"], REPORT]})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    assert not spider.failures, spider.failures[0].value
    [events] = reports(site, key)
    # Never on the element Lightpanda's made-up boxes put there instead.
    assert not [e for e in events if e[1] == "next"]
    trusted = browser == "chromium"
    assert ["click", "target", trusted] in events
    assert ["mouseover", "target", trusted] in events
    assert ["mouseenter", "target", trusted] in events


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_fill_replaces_the_text_with_trusted_inserted_text(
    site: SiteServer, browser: str
) -> None:
    """As Playwright's fill: the old text is replaced, the page sees a
    trusted ``input`` event and no key; an empty value clears the field; a
    field that is not fillable fails by name (before: the value was set by
    script, untrusted events, on any element)."""
    events, response = await seen_by_site(
        site,
        browser,
        [
            ["evaluate", "document.getElementById('txt').value = 'old text'"],
            ["fill", "#txt", "Hello wörld"],
            ["evaluate", "document.getElementById('txt').value"],
            ["fill", "#txt", ""],
            ["evaluate", "document.getElementById('txt').value"],
        ],
    )
    assert response.meta["cdp_results"][2] == "Hello wörld"
    assert response.meta["cdp_results"][4] == ""
    inputs = [e for e in of(events, "input") if e[1] == "txt"]
    assert inputs[0][2:] == [True, "", "Hello wörld"]
    assert inputs[-1][2:] == [True, "", ""]
    assert not [e for e in of(events, "keydown", "keyup") if e[3] != "Delete"]
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/input?key={key}"),
                        meta={"cdp": True, "cdp_actions": [["fill", "#cb", "x"]]})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    [failure] = spider.failures
    assert "#cb is an input of type checkbox: not fillable" in str(failure.value)


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_click_options_as_playwright_names_them(site: SiteServer, browser: str) -> None:
    """``button``, ``click_count``, ``delay``, ``position`` and (Chromium)
    ``modifiers`` reach the page as a user's click would carry them (before:
    refused as unknown keywords). Lightpanda does not pass held keys to mouse
    events: ``modifiers`` there fails by name before the page opens."""
    held = {"modifiers": ["Control", "Shift"]} if browser == "chromium" else {}
    events, _ = await seen_by_site(
        site,
        browser,
        [
            ["click", "#btn", {"click_count": 2, "delay": 10, **held}],
            ["click", "#btn", {"button": "right", "position": {"x": 10, "y": 5}}],
        ],
    )
    on_button = [e for e in events if e[1] == "btn"]
    assert all(e[2] is True for e in on_button)
    mods = ["true", "true"] if held else ["false", "false"]
    clicks = [(e[0], e[3].split(",")[:4]) for e in on_button]
    assert [c for c in clicks if c[0] in ("click", "dblclick")] == [
        ("click", ["0", "1", *mods]),
        ("click", ["0", "2", *mods]),
        ("dblclick", ["0", "2", *mods]),
    ]
    assert [c for c in clicks if c[0] in ("contextmenu", "auxclick")] == [
        ("contextmenu", ["2", "0", "false", "false"]),
        ("auxclick", ["2", "1", "false", "false"]),
    ]
    assert [e[3] for e in of(events, "keydown")] == (["Control", "Shift"] if held else [])
    if browser == "chromium":  # a real layout: the offset is where the click landed
        [right] = [e for e in on_button if e[0] == "contextmenu"]
        assert right[3].split(",")[4:] == ["10", "5"]


@pytest_twisted.ensureDeferred
async def test_a_click_with_keys_held_fails_by_name_on_lightpanda(site: SiteServer) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/input?key={token()}"),
                        meta={"cdp": True,
                              "cdp_actions": [["click", "#btn", {"modifiers": ["Control"]}]]})],
        {"CDP_POOL_BROWSER": "lightpanda"},
    )  # fmt: skip
    [failure] = spider.failures
    assert type(failure.value).__name__ == "ActionUnsupported"
    assert "does not pass keys held down to mouse events" in str(failure.value)
