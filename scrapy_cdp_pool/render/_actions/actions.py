"""Page actions as plain data: the allow-list, argument checks, and how each runs.

``meta["cdp_actions"]`` is a list of ``[name, *args]`` lists, a trailing dict
being keyword arguments, e.g. ``["wait_for_selector", ".quote", {"timeout": 5}]``.
Names and arguments follow Playwright's ``Page`` methods where they overlap.
``timeout`` is seconds; times inside an action (``wait_for_timeout``,
``delay``, ``polling``, ``stable_ms``, ``max_ms``) are milliseconds, as
Playwright's. The actions run in render/_actions/input_steps.py (elements, trusted
input), render/_actions/wait_steps.py (waits, ``goto``),
render/_actions/wheel_scroll.py (scrolling),
render/_actions/screenshots.py and here; argument values are checked in
render/_actions/action_args.py.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.backends import Backend, Capability
from scrapy_cdp_pool.errors import ActionUnsupported
from scrapy_cdp_pool.render._actions import action_args as args
from scrapy_cdp_pool.render._actions import input_steps, screenshots, wait_steps, wheel_scroll
from scrapy_cdp_pool.render._actions.action import Action
from scrapy_cdp_pool.render._actions.action_args import MAX_WAIT_S
from scrapy_cdp_pool.render._actions.elements import report_grace_s, wait_for_selector

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page import Page


_TypeSpec = type | tuple[type, ...]


@dataclass(frozen=True)
class _Signature:
    positional: tuple[_TypeSpec, ...]  # required, in order
    keywords: dict[str, _TypeSpec]  # optional
    run: Callable[[Page, Action, float], Awaitable[Any]]
    #: optional positional arguments, after the required ones
    optional: tuple[_TypeSpec, ...] = ()
    #: further checks of the values (see render/_actions/action_args.py)
    check: Callable[[Action], None] | None = None


_NUMBER: _TypeSpec = (int, float)
_T: dict[str, _TypeSpec] = {"timeout": _NUMBER}  # every action takes a timeout


async def _wait_for_selector(page: Page, action: Action, timeout_s: float) -> None:
    state = action.kwargs.get("state", "attached")
    await wait_for_selector(page, action.args[0], visible=state == "visible", timeout_s=timeout_s)


async def _wait_for_timeout(page: Page, action: Action, timeout_s: float) -> None:
    await asyncio.sleep(float(action.args[0]) / 1000)


async def _wait_for_load_state(page: Page, action: Action, timeout_s: float) -> None:
    await page.wait_for_load(action.args[0] if action.args else "load", timeout_s)


async def _scroll_to_bottom(page: Page, action: Action, timeout_s: float) -> None:
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)", timeout_s)


async def _evaluate(page: Page, action: Action, timeout_s: float) -> Any:
    result = await page.evaluate(action.args[0], timeout_s)
    await page.settle(timeout_s)
    return result


async def _pdf(page: Page, action: Action, timeout_s: float) -> bytes:
    params = {"printBackground": bool(action.kwargs.get("print_background", False))}
    result = await page.command("Page.printToPDF", params, timeout_s)
    return base64.b64decode(result["data"])


_STR_OR_LIST = (str, list)
ACTIONS: dict[str, _Signature] = {
    "wait_for_selector": _Signature(
        (str,), {**_T, "state": str}, _wait_for_selector, check=args.wait_for_selector
    ),
    "wait_for_timeout": _Signature((_NUMBER,), {}, _wait_for_timeout, check=args.wait_for_timeout),
    "wait_for_load_state": _Signature(
        (), _T, _wait_for_load_state, optional=(str,), check=args.wait_for_load_state
    ),
    "wait_for_function": _Signature(
        (str,),
        {**_T, "arg": object, "polling": (str, int, float)},
        wait_steps.wait_for_function,
        check=args.wait_for_function,
    ),
    "wait_for_url": _Signature(
        (str,), {**_T, "wait_until": str}, wait_steps.wait_for_url, check=args.url_pattern
    ),
    "wait_for_response": _Signature(
        (str,), _T, wait_steps.wait_for_response, check=args.url_pattern
    ),
    "goto": _Signature(
        (str,), {**_T, "wait_until": str, "referer": str}, wait_steps.goto, check=args.goto
    ),
    "click": _Signature(
        (str,),
        {
            **_T,
            "button": str,
            "click_count": int,
            "delay": _NUMBER,
            "modifiers": list,
            "position": dict,
        },
        input_steps.click,
        check=args.click,
    ),
    "hover": _Signature((str,), _T, input_steps.hover),
    "fill": _Signature((str, str), _T, input_steps.fill),
    "type": _Signature((str, str), {**_T, "delay": _NUMBER}, input_steps.type_, check=args.type_),
    "press": _Signature((str, str), {**_T, "delay": _NUMBER}, input_steps.press, check=args.press),
    "select_option": _Signature(
        (str,),
        {**_T, "value": _STR_OR_LIST, "label": _STR_OR_LIST, "index": (int, list)},
        input_steps.select_option,
        optional=(_STR_OR_LIST,),
        check=args.select_option,
    ),
    "check": _Signature((str,), _T, input_steps.check),
    "uncheck": _Signature((str,), _T, input_steps.uncheck),
    "scroll_to_bottom": _Signature((), _T, _scroll_to_bottom),
    "scroll_until_stable": _Signature(
        (),
        {**_T, "stable_ms": _NUMBER, "max_scrolls": int, "max_ms": _NUMBER},
        wheel_scroll.scroll_until_stable,
        optional=(str,),
        check=args.scroll_until_stable,
    ),
    "evaluate": _Signature((str,), _T, _evaluate),
    "screenshot": _Signature(
        (),
        {**_T, "full_page": bool, "type": str, "quality": int, "selector": str, "clip": dict},
        screenshots.screenshot,
        check=args.screenshot,
    ),
    "pdf": _Signature((), {**_T, "print_background": bool}, _pdf),
}
"""The allow-list; the README's "Page actions" describes each."""


def _names(expected: _TypeSpec) -> str:
    types = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(t.__name__ for t in types)


def parse_actions(raw: Any) -> tuple[Action, ...]:
    """Check ``meta["cdp_actions"]`` against the allow-list.

    :raises ValueError: naming the first bad action (its position and name) and
        what is wrong: unknown name, missing, extra or mistyped arguments.
    """
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"expected a list of [name, *args] lists, got {raw!r}")
    return tuple(_parse_action(index, item) for index, item in enumerate(raw))


def _parse_action(index: int, item: Any) -> Action:
    """Action ``#index`` of ``meta["cdp_actions"]``, checked (see :func:`parse_actions`)."""
    if isinstance(item, str):
        item = [item]
    if not isinstance(item, (list, tuple)) or not item or not isinstance(item[0], str):
        raise ValueError(f"action #{index}: expected [name, *args], got {item!r}")
    name, *args = item
    signature = ACTIONS.get(name)
    if signature is None:
        raise ValueError(f"action #{index}: unknown action {name!r}; allowed: {', '.join(ACTIONS)}")
    where = f"action #{index} {name!r}"
    kwargs: dict[str, Any] = dict(args.pop()) if args and isinstance(args[-1], dict) else {}
    _check_positional(where, signature, args)
    _check_keywords(where, signature, kwargs)
    action = Action(name, tuple(args), kwargs)
    if signature.check is not None:
        try:
            signature.check(action)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from e
    return action


def _check_positional(where: str, signature: _Signature, args: list[Any]) -> None:
    required = len(signature.positional)
    if not required <= len(args) <= required + len(signature.optional):
        optional = f" (and {len(signature.optional)} optional)" if signature.optional else ""
        raise ValueError(
            f"{where}: takes {required} positional argument(s){optional}, got {len(args)}: {args!r}"
        )
    expected_types = signature.positional + signature.optional
    for position, (value, expected) in enumerate(zip(args, expected_types, strict=False)):
        if isinstance(value, bool) or not isinstance(value, expected):
            raise ValueError(
                f"{where}: argument {position} {value!r} has the wrong "
                f"type (expected {_names(expected)})"
            )


def _check_keywords(where: str, signature: _Signature, kwargs: dict[str, Any]) -> None:
    for key, value in kwargs.items():
        expected_kw = signature.keywords.get(key)
        if expected_kw is None:
            raise ValueError(
                f"{where}: unknown keyword {key!r}; "
                f"allowed: {', '.join(signature.keywords) or 'none'}"
            )
        if not isinstance(value, expected_kw) or (
            isinstance(value, bool) and expected_kw is not bool and expected_kw is not object
        ):
            raise ValueError(
                f"{where}: keyword {key}={value!r} has the wrong type "
                f"(expected {_names(expected_kw)})"
            )
    timeout = kwargs.get("timeout")
    if timeout is not None and not (0 < timeout <= MAX_WAIT_S):
        raise ValueError(
            f"{where}: timeout={timeout!r}; expected seconds > 0 and at most {MAX_WAIT_S:g}"
        )


_NO_LAYOUT_SCROLL = (
    "Lightpanda has no layout: scrolling fires no IntersectionObserver event and "
    "its page heights are made up, so content loaded on scroll never comes"
)

#: What Lightpanda cannot do (it has no layout and renders no pixels): action
#: name -> (test on the action, why). Checked before the page is opened.
LIGHTPANDA_UNSUPPORTED: dict[str, tuple[Callable[[Action], bool], str]] = {
    "click": (
        lambda a: bool(a.kwargs.get("modifiers")),
        (
            "Lightpanda does not pass keys held down to mouse events (measured on 1.0.2: "
            "ctrlKey and shiftKey stay false)"
        ),
    ),
    "scroll_to_bottom": (lambda a: True, _NO_LAYOUT_SCROLL),
    "scroll_until_stable": (lambda a: True, _NO_LAYOUT_SCROLL),
    "screenshot": (
        lambda a: a.kwargs.get("type", "png") != "png" or bool({"selector", "clip"} & {*a.kwargs}),
        (
            "Lightpanda takes PNG screenshots of the whole viewport only (it renders no "
            "pixels: an element or a clip would be a blank image)"
        ),
    ),
}


def check_supported(actions: tuple[Action, ...], backend: Backend) -> None:
    """Fail before the page is opened when ``backend`` (one without
    :attr:`Capability.LAYOUT <scrapy_cdp_pool.browser.backends.Capability.LAYOUT>`:
    Lightpanda) cannot perform one of ``actions``.

    :raises ActionUnsupported: naming the action, its position, the backend
        and what to do (use Chromium).
    """
    if backend.can(Capability.LAYOUT):
        return
    for index, action in enumerate(actions):
        check = LIGHTPANDA_UNSUPPORTED.get(action.name)
        if check is not None and check[0](action):
            options = f" {action.kwargs}" if action.kwargs else ""
            raise ActionUnsupported(
                f"action #{index} {action.describe()}{options}: {check[1]}; render this "
                "request on Chromium (CDP_POOL_BROWSER = 'chromium', or a Chromium endpoint)"
            )


def action_timeout_s(action: Action, default_timeout_s: float) -> float:
    """An action's deadline, seconds: its ``timeout`` kwarg, else
    ``default_timeout_s`` (``CDP_POOL_ACTION_TIMEOUT_SECONDS``);
    ``wait_for_timeout`` at least what it waits, as Playwright's."""
    timeout_s = float(action.kwargs.get("timeout", default_timeout_s))
    if action.name == "wait_for_timeout":
        timeout_s = max(timeout_s, float(action.args[0]) / 1000)
    return timeout_s


async def run_action(page: Page, action: Action, default_timeout_s: float) -> Any:
    """Run one action with its deadline (``timeout`` kwarg, seconds, else the
    default) and return its result (``None``, a JSON value, or bytes).

    :raises TimeoutError: the action did not finish in time.
    """
    timeout_s = action_timeout_s(action, default_timeout_s)
    if page.responses is not None:
        page.responses.mark()
    page.tracker.count_navigations_from_here()  # an action's navigation is no loop
    # its polls in the page take the whole timeout: their reason may come later
    async with asyncio.timeout(timeout_s + report_grace_s(timeout_s)):
        return await ACTIONS[action.name].run(page, action, timeout_s)
