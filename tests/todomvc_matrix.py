"""The TodoMVC matrix: one scenario on each vendored TodoMVC app
(tests/site/todomvc/), driven by Playwright for Python on Chromium and by a
Scrapy crawl with this plugin (``cdp_actions``) on each backend.

The scenario, as a user would do it: add three todos (fill the new-todo
field, press Enter), tick the first one's checkbox, click the "Active"
filter (a ``#/active`` hash route: no new document), wait until the app
marks that filter selected, then read the labels of the todos shown (those
with a layout box, inside open shadow roots too). Each run's outcome is an
:class:`Outcome`: the labels seen, or the error.

``python -m tests.todomvc_matrix [backend ...]`` starts the test site and
prints the table (backends: ``playwright``, ``chromium``, ``lightpanda``;
all by default). Run it inside ``/work/tools/slot`` on a shared machine.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import dataclass
from typing import Any

import scrapy

from tests.crawl import crawl
from tests.site.todomvc import APPS

TODOS = ("buy milk", "feed the cat", "call mum")
#: seconds: each wait of the scenario (generous: a loaded machine)
STEP_TIMEOUT_S = 30
BACKENDS = ("playwright", "chromium", "lightpanda")
#: the plugin's settings for each of its backends
PLUGIN_SETTINGS: dict[str, dict[str, Any]] = {
    "chromium": {"CDP_POOL_BROWSER": "chromium"},
    "lightpanda": {},
}


@dataclass(frozen=True)
class App:
    """One app's selectors: CSS, through open shadow roots as both drivers
    match them (a combinator crossing into a shadow root included), except
    ``label``, read by :data:`READ_VISIBLE` within each root."""

    name: str
    new_todo: str = ".new-todo"
    toggle: str = ".todo-list li .toggle"
    label: str = ".todo-list li label"
    active_link: str = 'a[href="#/active"]'
    active_selected: str = 'a.selected[href="#/active"]'
    #: the app lists the newest todo first (so the first checkbox is the last todo's)
    newest_first: bool = False

    @property
    def expected(self) -> list[str]:
        """What the "Active" filter shows once the first todo listed is completed."""
        listed = list(reversed(TODOS)) if self.newest_first else list(TODOS)
        return listed[1:]


SELECTORS = {
    "javascript-es6": App("javascript-es6", newest_first=True),
    "jquery": App("jquery"),
    "react": App("react"),
    "vue": App("vue"),
    # each todo-item renders its <li> in a shadow root of its own, inside
    # todo-list's: the action's selector crosses them, as in the light-DOM apps
    "lit": App("lit", label="li.todo label"),
    "web-components": App(
        "web-components",
        new_todo=".new-todo-input",
        toggle="todo-list .toggle-todo-input",
        label=".todo-item .todo-item-text",
    ),
}
assert tuple(SELECTORS) == APPS

#: the labels of ``sel``'s elements that have a layout box, in the document
#: and every open shadow root (a todo hidden by ``display: none`` on it or an
#: ancestor, shadow host included, has none)
READ_VISIBLE = (
    "(sel) => { const out = []; const walk = (root) => {"
    " for (const el of root.querySelectorAll(sel))"
    " if (el.getClientRects().length > 0) out.push(el.textContent.trim());"
    " for (const host of root.querySelectorAll('*')) if (host.shadowRoot) walk(host.shadowRoot); };"
    " walk(document); return out; }"
)
#: truthy once ``arg.n`` todos are shown
SHOWS_N = "(arg) => (%s)(arg.sel).length === arg.n" % READ_VISIBLE


@dataclass(frozen=True)
class Outcome:
    """One app on one driver: ``items`` seen on ``#/active``, or ``error``;
    ``ok`` when the items are the app's :attr:`App.expected`."""

    app: str
    items: list[str] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.items == SELECTORS[self.app].expected

    def cell(self) -> str:
        if self.error is not None:
            # the request's URL and the long wait_for_function script left out
            error = re.sub(r"^.*?: (action #\d+ \w+).*?(timed out.*)$", r"\1 \2", self.error)
            return "error: " + error[:150].replace("|", "\\|")
        return ("ok " if self.ok else "wrong: ") + ", ".join(self.items or [])


def actions(app: App) -> list[list[Any]]:
    """The scenario as ``cdp_actions``; the last result is the labels read."""
    timeout = {"timeout": STEP_TIMEOUT_S}
    steps: list[list[Any]] = [["wait_for_selector", app.new_todo, timeout]]
    for n, todo in enumerate(TODOS, start=1):
        steps += [
            ["fill", app.new_todo, todo, timeout],
            ["press", app.new_todo, "Enter", timeout],
            ["wait_for_function", SHOWS_N, {"arg": {"sel": app.label, "n": n}, **timeout}],
        ]
    steps += [
        ["click", app.toggle, timeout],
        ["click", app.active_link, timeout],
        ["wait_for_selector", app.active_selected, timeout],
        ["evaluate", "(%s)(%s)" % (READ_VISIBLE, json.dumps(app.label)), timeout],
    ]
    return steps


def first_line(error: BaseException) -> str:
    """The error's first line (its type's name if it has no text)."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


async def run_plugin(base_url: str, backend: str) -> dict[str, Outcome]:
    """Every app in one crawl on the plugin's ``backend``; call from a
    Twisted coroutine (the test's reactor)."""
    requests = [
        scrapy.Request(
            f"{base_url}/todomvc/{name}/",
            meta={"cdp": True, "cdp_actions": actions(app), "app": name},
        )
        for name, app in SELECTORS.items()
    ]
    settings = {
        **PLUGIN_SETTINGS[backend],
        "DOWNLOAD_TIMEOUT": 12 * STEP_TIMEOUT_S,
        "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": STEP_TIMEOUT_S,
        "CDP_POOL_ACTION_TIMEOUT_SECONDS": STEP_TIMEOUT_S,
    }
    spider, _ = await crawl(requests, settings)
    out: dict[str, Outcome] = {}
    for response in spider.responses:
        app = response.meta["app"]
        out[app] = Outcome(app, items=response.meta["cdp_results"][-1])
    for failure in spider.failures:
        app = failure.request.meta["app"]  # type: ignore[attr-defined]
        out[app] = Outcome(app, error=first_line(failure.value))
    return out


async def run_playwright_app(browser: Any, url: str, app: App) -> Outcome:
    """The scenario with Playwright's own API in a fresh context."""
    from playwright.async_api import Error as PlaywrightError

    ms = STEP_TIMEOUT_S * 1000
    context = await browser.new_context()
    try:
        page = await context.new_page()
        page.set_default_timeout(ms)
        await page.goto(url, wait_until="load")
        for n, todo in enumerate(TODOS, start=1):
            await page.fill(app.new_todo, todo)
            await page.press(app.new_todo, "Enter")
            await page.wait_for_function(SHOWS_N, arg={"sel": app.label, "n": n})
        await page.click(app.toggle)
        await page.click(app.active_link)
        await page.wait_for_selector(app.active_selected, state="attached")
        items = await page.locator(app.label).filter(visible=True).all_inner_texts()
        return Outcome(app.name, items=[item.strip() for item in items])
    except PlaywrightError as e:
        return Outcome(app.name, error=first_line(e))
    finally:
        await context.close()


async def run_playwright(base_url: str) -> dict[str, Outcome]:
    """Every app with Playwright on /usr/bin/chromium (asyncio)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        try:
            return {
                name: await run_playwright_app(browser, f"{base_url}/todomvc/{name}/", app)
                for name, app in SELECTORS.items()
            }
        finally:
            await browser.close()


def table(results: dict[str, dict[str, Outcome]]) -> str:
    """A Markdown table: one row per app, one column per driver."""
    names = list(results)
    lines = ["| app | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for app in APPS:
        cells = [results[name][app].cell() if app in results[name] else "-" for name in names]
        lines.append(f"| `{app}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    from twisted.internet import asyncioreactor

    asyncioreactor.install()
    from twisted.internet import defer, reactor

    from tests.servers import SiteServer

    wanted = argv or list(BACKENDS)
    site = SiteServer()
    results: dict[str, dict[str, Outcome]] = {}

    async def run() -> None:
        for backend in wanted:
            if backend == "playwright":
                future = asyncio.ensure_future(run_playwright(site.base))
                results[backend] = await defer.Deferred.fromFuture(future)
            else:
                results[backend] = await run_plugin(site.base, backend)

    done = defer.ensureDeferred(run())
    done.addErrback(lambda failure: print(failure.getTraceback(), file=sys.stderr))
    done.addBoth(lambda _: reactor.stop())  # type: ignore[attr-defined]
    try:
        reactor.run()  # type: ignore[attr-defined]
    finally:
        site.stop()
    print(table(results))


if __name__ == "__main__":
    main(sys.argv[1:])
