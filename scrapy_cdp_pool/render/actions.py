"""Page actions as plain data: the allow-list, argument checks, and how each runs.

``meta["cdp_actions"]`` is a list of ``[name, *args]`` lists, a trailing dict
being keyword arguments, e.g. ``["wait_for_selector", ".quote", {"timeout": 5}]``.
Names follow Playwright's ``Page`` methods where they overlap. Times given to
actions are seconds (``timeout``), except ``wait_for_timeout`` which takes
milliseconds as Playwright's does.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.backends import Backend, Capability
from scrapy_cdp_pool.errors import ActionUnsupported

if TYPE_CHECKING:
    from scrapy_cdp_pool.render.page import Page


@dataclass(frozen=True)
class Action:
    """One parsed action: its name, positional and keyword arguments."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def describe(self) -> str:
        return f"{self.name}{list(self.args)!r}"


@dataclass(frozen=True)
class _Signature:
    positional: tuple[type | tuple[type, ...], ...]  # required, in order
    keywords: dict[str, type | tuple[type, ...]]  # optional
    run: Callable[[Page, Action, float], Awaitable[Any]]


_NUMBER = (int, float)


async def _wait_for_selector(page: Page, action: Action, timeout_s: float) -> None:
    state = action.kwargs.get("state", "attached")
    if state not in ("attached", "visible"):
        raise ValueError(f"{action.describe()}: state must be 'attached' or 'visible'")
    await page.wait_for_selector(action.args[0], visible=state == "visible", timeout_s=timeout_s)


async def _wait_for_timeout(page: Page, action: Action, timeout_s: float) -> None:
    await asyncio.sleep(float(action.args[0]) / 1000)


async def _wait_for_load_state(page: Page, action: Action, timeout_s: float) -> None:
    state = action.args[0] if action.args else "load"
    if state not in ("load", "domcontentloaded", "networkidle"):
        raise ValueError(
            f"{action.describe()}: state must be 'load', 'domcontentloaded' or 'networkidle'"
        )
    await page.wait_for_load(state, timeout_s)


async def _click(page: Page, action: Action, timeout_s: float) -> None:
    await page.run_on_element(action.args[0], "el.click()", timeout_s)
    await page.settle(timeout_s)


async def _fill(page: Page, action: Action, timeout_s: float) -> None:
    value = json.dumps(action.args[1])
    script = (
        f"el.focus(); el.value = {value};"
        "el.dispatchEvent(new Event('input', {bubbles: true}));"
        "el.dispatchEvent(new Event('change', {bubbles: true}))"
    )
    await page.run_on_element(action.args[0], script, timeout_s)


async def _press(page: Page, action: Action, timeout_s: float) -> None:
    key = json.dumps(action.args[1])
    script = (
        f"el.focus(); for (const t of ['keydown', 'keypress', 'keyup'])"
        f" el.dispatchEvent(new KeyboardEvent(t, {{key: {key}, bubbles: true}}));"
        f" if ({key} === 'Enter' && el.form) el.form.requestSubmit ? el.form.requestSubmit()"
        " : el.form.submit()"
    )
    await page.run_on_element(action.args[0], script, timeout_s)
    await page.settle(timeout_s)


async def _scroll_to_bottom(page: Page, action: Action, timeout_s: float) -> None:
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)", timeout_s)


async def _evaluate(page: Page, action: Action, timeout_s: float) -> Any:
    result = await page.evaluate(action.args[0], timeout_s)
    await page.settle(timeout_s)
    return result


async def _screenshot(page: Page, action: Action, timeout_s: float) -> bytes:
    image_type = action.kwargs.get("type", "png")
    if image_type not in ("png", "jpeg"):
        raise ValueError(f"{action.describe()}: type must be 'png' or 'jpeg'")
    params: dict[str, Any] = {"format": image_type}
    if action.kwargs.get("full_page"):
        params["captureBeyondViewport"] = True
    result = await page.command("Page.captureScreenshot", params, timeout_s)
    return base64.b64decode(result["data"])


async def _pdf(page: Page, action: Action, timeout_s: float) -> bytes:
    params = {"printBackground": bool(action.kwargs.get("print_background", False))}
    result = await page.command("Page.printToPDF", params, timeout_s)
    return base64.b64decode(result["data"])


ACTIONS: dict[str, _Signature] = {
    "wait_for_selector": _Signature((str,), {"timeout": _NUMBER, "state": str}, _wait_for_selector),
    "wait_for_timeout": _Signature((_NUMBER,), {}, _wait_for_timeout),
    "wait_for_load_state": _Signature((), {"timeout": _NUMBER}, _wait_for_load_state),
    "click": _Signature((str,), {"timeout": _NUMBER}, _click),
    "fill": _Signature((str, str), {"timeout": _NUMBER}, _fill),
    "press": _Signature((str, str), {"timeout": _NUMBER}, _press),
    "scroll_to_bottom": _Signature((), {"timeout": _NUMBER}, _scroll_to_bottom),
    "evaluate": _Signature((str,), {"timeout": _NUMBER}, _evaluate),
    "screenshot": _Signature((), {"full_page": bool, "type": str, "timeout": _NUMBER}, _screenshot),
    "pdf": _Signature((), {"print_background": bool, "timeout": _NUMBER}, _pdf),
}
"""The allow-list. ``wait_for_load_state`` also takes one optional positional
state (``"load"``, ``"domcontentloaded"`` or ``"networkidle"``)."""

_OPTIONAL_POSITIONAL = {"wait_for_load_state": 1}


def parse_actions(raw: Any) -> tuple[Action, ...]:
    """Check ``meta["cdp_actions"]`` against the allow-list.

    :raises ValueError: naming the first bad action (its position and name) and
        what is wrong: unknown name, missing, extra or mistyped arguments.
    """
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"expected a list of [name, *args] lists, got {raw!r}")
    actions = []
    for index, item in enumerate(raw):
        if isinstance(item, str):
            item = [item]
        if not isinstance(item, (list, tuple)) or not item or not isinstance(item[0], str):
            raise ValueError(f"action #{index}: expected [name, *args], got {item!r}")
        name, *args = item
        signature = ACTIONS.get(name)
        if signature is None:
            raise ValueError(
                f"action #{index}: unknown action {name!r}; allowed: {', '.join(ACTIONS)}"
            )
        kwargs: dict[str, Any] = {}
        if args and isinstance(args[-1], dict):
            kwargs = dict(args.pop())
        optional = _OPTIONAL_POSITIONAL.get(name, 0)
        required = len(signature.positional)
        if not required <= len(args) <= required + optional:
            raise ValueError(
                f"action #{index} {name!r}: takes {required} positional argument(s), "
                f"got {len(args)}: {args!r}"
            )
        for position, (value, expected) in enumerate(zip(args, signature.positional, strict=False)):
            if isinstance(value, bool) or not isinstance(value, expected):
                raise ValueError(
                    f"action #{index} {name!r}: argument {position} {value!r} has the wrong type"
                )
        for key, value in kwargs.items():
            expected_kw = signature.keywords.get(key)
            if expected_kw is None:
                raise ValueError(
                    f"action #{index} {name!r}: unknown keyword {key!r}; "
                    f"allowed: {', '.join(signature.keywords) or 'none'}"
                )
            if not isinstance(value, expected_kw) or (
                isinstance(value, bool) and expected_kw is _NUMBER
            ):
                raise ValueError(
                    f"action #{index} {name!r}: keyword {key}={value!r} has the wrong type"
                )
        actions.append(Action(name, tuple(args), kwargs))
    return tuple(actions)


#: What Lightpanda cannot do (it has no layout and renders no pixels): action
#: name -> (test on the action, why). Checked before the page is opened.
LIGHTPANDA_UNSUPPORTED: dict[str, tuple[Callable[[Action], bool], str]] = {
    "scroll_to_bottom": (
        lambda a: True,
        (
            "Lightpanda has no layout: scrolling moves nothing and fires no scroll or "
            "IntersectionObserver event, so content loaded on scroll never comes"
        ),
    ),
    "screenshot": (
        lambda a: a.kwargs.get("type", "png") != "png",
        "Lightpanda takes PNG screenshots only",
    ),
}


def check_supported(actions: tuple[Action, ...], backend: Backend) -> None:
    """Fail before the page is opened when ``backend`` (one without
    :attr:`Capability.LAYOUT <scrapy_cdp_pool.backends.Capability.LAYOUT>`:
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


async def run_action(page: Page, action: Action, default_timeout_s: float) -> Any:
    """Run one action with its deadline (``timeout`` kwarg, seconds, else the
    default) and return its result (``None``, a JSON value, or bytes).

    :raises TimeoutError: the action did not finish in time.
    """
    timeout_s = float(action.kwargs.get("timeout", default_timeout_s))
    async with asyncio.timeout(timeout_s):
        return await ACTIONS[action.name].run(page, action, timeout_s)
