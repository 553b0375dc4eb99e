"""One page (target) in one fresh browser context, attached as a flat session:
navigate, wait until settled, run scripts for actions, read the DOM.

Its ``Fetch`` pauses are answered by :class:`~scrapy_cdp_pool.render.interception.FetchInterceptor`;
what the main frame shows is kept by :class:`~scrapy_cdp_pool.render.document.DocumentTracker`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Coroutine
from typing import Any

from scrapy_cdp_pool.cdp import CDPConnection, CDPConnectionClosed, CDPProtocolError
from scrapy_cdp_pool.render.document import DocumentTracker
from scrapy_cdp_pool.render.errors import (
    NavigationFailed,
    PageCrashed,
    PageScriptError,
    ResponseTooLarge,
)
from scrapy_cdp_pool.render.interception import FetchInterceptor, cdp_resource_type
from scrapy_cdp_pool.render.spec import RenderSpec

logger = logging.getLogger(__name__)

_READ_HTML = (
    "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '')"
    " + document.documentElement.outerHTML"
)
_CONTEXT_GONE = ("Execution context was destroyed", "Cannot find context", "context not found")


class Page:
    """A target in a browser context, driven through one CDP session.

    Create with :meth:`attach`. ``tracker`` holds what the main frame shows.
    """

    def __init__(
        self, cdp: CDPConnection, target_id: str, session_id: str, spec: RenderSpec
    ) -> None:
        self.cdp = cdp
        self.target_id = target_id
        self.session_id = session_id
        self.spec = spec
        self.tracker = DocumentTracker(main_frame_id=target_id)
        self.interceptor = FetchInterceptor(self)
        self.too_large: ResponseTooLarge | None = None
        #: the server's HTTP cache ignores cookies: keep ``Vary: Cookie``
        #: responses out of it (see ``FetchInterceptor``)
        self.guard_cache = False
        self._setup: asyncio.Future[list[dict[str, Any]]] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.started_at = time.monotonic()
        cdp.subscribe(session_id, self._on_event)

    @classmethod
    async def attach(
        cls,
        cdp: CDPConnection,
        context_id: str,
        spec: RenderSpec,
        *,
        network_events: bool,
        default_user_agent: str = "",
        unsupported: frozenset[str] = frozenset(),
        pipeline_navigation: bool = False,
        guard_cache: bool = False,
    ) -> Page:
        """Create a blank target in ``context_id``, attach to it, enable the
        domains a render needs and apply the identity's options (user agent,
        locale, headers...), pipelined in one round trip.

        ``network_events``: enable the Network domain (Chromium reports
        ``Set-Cookie`` only in its events). ``guard_cache``: the page's HTTP
        cache serves other identities or cookie jars (Lightpanda's with
        ``ServerInfo.cache_ignores_cookies``, or a page kept for reuse):
        subresources are paused at the response stage too, so that those
        that must not be shared are kept out of it.
        """
        target = await cdp.send(
            "Target.createTarget", {"url": "about:blank", "browserContextId": context_id}
        )
        target_id = target["targetId"]
        session_id = cdp.take_attached_session(target_id) if cdp.auto_attach else None
        if session_id is None:
            attached = await cdp.send(
                "Target.attachToTarget", {"targetId": target_id, "flatten": True}
            )
            session_id = attached["sessionId"]
        page = cls(cdp, target_id, session_id, spec)
        page.guard_cache = guard_cache
        context = spec.context
        fetch = _fetch_params(spec, unsupported, guard_cache)
        commands = [page.command("Page.enable"), page.command("Fetch.enable", fetch)]
        if network_events or (context is not None and context.needs_network_domain):
            commands.append(page.command("Network.enable"))
        if context is not None:
            for method, params in context.page_commands(default_user_agent, unsupported):
                commands.append(page.command(method, params))
        if spec.cookies:
            cookies = [{"name": n, "value": v, "url": spec.url} for n, v in spec.cookies]
            commands.append(page.command("Network.setCookies", {"cookies": cookies}))
        setup = asyncio.gather(*commands)
        if context is None and pipeline_navigation:
            # Nothing identity-specific to apply first, and a server that handles
            # a connection's commands in order (Lightpanda): Page.navigate goes
            # out in the same write as the enables. Chromium handles Page.enable
            # in the renderer and Page.navigate in the browser process, so the
            # navigation could start before the page reports its events.
            page._setup = setup
        else:
            await setup
        return page

    @classmethod
    async def reattach(
        cls,
        cdp: CDPConnection,
        context_id: str,
        target_id: str,
        session_id: str,
        spec: RenderSpec,
        *,
        clear_cookies: bool,
        guard_cache: bool = False,
    ) -> Page:
        """Take over a page a previous request of the same identity left open
        (``CDP_POOL_REUSE_PAGES``): its domains and identity options are still
        set; only this request's interception, and for the anonymous identity
        a cookie jar emptied and refilled from Scrapy's, are sent and answered
        before the navigation starts."""
        page = cls(cdp, target_id, session_id, spec)
        page.guard_cache = guard_cache
        commands = [page.command("Fetch.enable", _fetch_params(spec, guard_cache=guard_cache))]
        if clear_cookies:
            commands.append(cdp.post("Storage.clearCookies", {"browserContextId": context_id}))
        if spec.cookies:
            cookies = [{"name": n, "value": v, "url": spec.url} for n, v in spec.cookies]
            commands.append(page.command("Network.setCookies", {"cookies": cookies}))
        await asyncio.gather(*commands)
        return page

    def command(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """Queue a command to this page's session now and return a coroutine
        that waits for its answer (see :meth:`CDPConnection.post`)."""
        return self.cdp.post(method, params, self.session_id, timeout_s)

    def detach(self) -> None:
        """Stop handling events; pending pause handlers are cancelled."""
        self.cdp.unsubscribe(self.session_id)
        for task in self._tasks:
            task.cancel()

    async def navigate(self, timeout_s: float) -> None:
        """Navigate to the spec's URL and wait until the page is settled
        (``wait_until``). A page whose document arrived but whose load event
        did not within ``timeout_s`` seconds is taken as it is.

        :raises NavigationFailed: the browser could not load the URL.
        :raises TimeoutError: no main document within ``timeout_s`` seconds.
        """
        self.tracker.navigation_pending = True
        navigate = asyncio.ensure_future(self.command("Page.navigate", {"url": self.spec.url}))
        navigate.add_done_callback(self._on_navigate_answer)
        try:
            if self._setup is not None:
                setup, self._setup = self._setup, None
                await setup
            await self.wait_settled(self.spec.wait_until, timeout_s)
        except TimeoutError:
            if self.tracker.document is None:
                raise
            logger.debug("%s: no load event within %.1f s; reading the page as is",
                          self.spec.url, timeout_s)  # fmt: skip
        finally:
            if not navigate.done():
                navigate.cancel()

    def _on_navigate_answer(self, future: asyncio.Future[dict[str, Any]]) -> None:
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            if not isinstance(error, CDPConnectionClosed):
                self.tracker.on_failure(str(error))
            return
        error_text = future.result().get("errorText")
        if error_text and self.tracker.document is None:
            self.tracker.on_failure(str(error_text))

    async def wait_settled(self, wait_until: str, timeout_s: float) -> None:
        """Wait until :meth:`DocumentTracker.settled`.

        :raises NavigationFailed, PageCrashed: as soon as they happen.
        :raises TimeoutError: after ``timeout_s`` seconds.
        """
        tracker = self.tracker
        async with asyncio.timeout(timeout_s):
            while True:
                if self.too_large is not None:
                    raise self.too_large
                if tracker.crashed:
                    raise PageCrashed(f"{self.spec.url}: {tracker.crashed}")
                if tracker.failure and tracker.document is None:
                    raise NavigationFailed(self.spec.url, tracker.failure)
                if tracker.settled(wait_until):
                    return
                tracker.changed.clear()
                await tracker.changed.wait()

    async def wait_for_load(self, state: str, timeout_s: float) -> None:
        await self.wait_settled(state, timeout_s)

    async def settle(self, timeout_s: float) -> None:
        """After an action: if it started a navigation, wait for the new page.

        First let the page's event loop turn once (a ``setTimeout(0)`` promise):
        Lightpanda schedules a click's navigation on its next turn, Chromium
        reports it at once; either way the navigation events arrive before the
        answer, or the answer is an error because the page already went away.
        """
        try:
            await self.command(
                "Runtime.evaluate",
                {"expression": "new Promise(r => setTimeout(r, 0))", "awaitPromise": True},
                timeout_s,
            )
        except CDPProtocolError as e:
            logger.debug("%s: the page navigated during an action: %s", self.spec.url, e)
        if not self.tracker.settled("load"):
            await self.wait_settled("load", timeout_s)

    async def evaluate(self, expression: str, timeout_s: float) -> Any:
        """Evaluate JavaScript in the page (promises awaited) and return its
        JSON value.

        :raises PageScriptError: the script threw.
        """
        result = await self.command(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout_s,
        )
        details = result.get("exceptionDetails")
        if details:
            exception = details.get("exception") or {}
            message = exception.get("description") or details.get("text") or "script error"
            raise PageScriptError(str(message).splitlines()[0])
        return result.get("result", {}).get("value")

    async def run_on_element(self, selector: str, script: str, timeout_s: float) -> Any:
        """Run ``script`` with ``el`` bound to the first element matching
        ``selector``.

        :raises PageScriptError: no element matches, or the script threw.
        """
        sel = json.dumps(selector)
        expression = (
            f"(() => {{ const el = document.querySelector({sel});"
            f" if (!el) throw new Error('no element matches ' + {sel}); {script}; }})()"
        )
        return await self.evaluate(expression, timeout_s)

    async def wait_for_selector(self, selector: str, *, visible: bool, timeout_s: float) -> None:
        """Wait until an element matches ``selector`` (and has a layout box
        when ``visible``), checking every 50 ms in the page.

        :raises PageScriptError: not found within ``timeout_s`` seconds.
        """
        sel = json.dumps(selector)
        check = "el && (!VIS || el.getClientRects().length > 0)".replace(
            "VIS", "true" if visible else "false"
        )
        expression = (
            f"new Promise((resolve, reject) => {{ const t0 = Date.now();"
            f" (function poll() {{ const el = document.querySelector({sel});"
            f" if ({check}) return resolve(true);"
            f" if (Date.now() - t0 > {int(timeout_s * 1000)}) return reject("
            f"new Error('no element matches ' + {sel} + ' after {timeout_s:g} s'));"
            f" setTimeout(poll, 50); }})(); }})"
        )
        await self.evaluate(expression, timeout_s + 1)

    async def read_html(self, timeout_s: float) -> str:
        """The rendered DOM, doctype included. If the page is replaced while it
        is read, wait for the new one and read again (at most 3 times)."""
        for _ in range(3):
            try:
                value = await self.evaluate(_READ_HTML, timeout_s)
                return str(value or "")
            except (CDPProtocolError, PageScriptError) as e:
                if not any(marker in str(e) for marker in _CONTEXT_GONE):
                    raise
                await self.wait_settled("domcontentloaded", timeout_s)
        raise PageScriptError(f"{self.spec.url}: the page kept navigating while being read")

    # Fetch interception -------------------------------------------------

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Fetch.requestPaused":
            task = asyncio.get_running_loop().create_task(self.interceptor.on_paused(params))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif method == "Fetch.authRequired":
            task = asyncio.get_running_loop().create_task(self.interceptor.on_auth(params))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            self.tracker.on_event(method, params)

    async def read_local_storage(self, timeout_s: float) -> tuple[str, list[dict[str, str]]]:
        """The current document's origin and its localStorage items, as
        Playwright's ``storageState`` lists them."""
        value = await self.evaluate(
            "(() => { let items = []; try { items = Object.entries(localStorage)"
            ".map(([name, value]) => ({name, value})); } catch (e) {}"
            " return {origin: location.origin, items}; })()",
            timeout_s,
        )
        if not isinstance(value, dict):
            return "", []
        return str(value.get("origin") or ""), list(value.get("items") or [])


def _fetch_params(
    spec: RenderSpec, unsupported: frozenset[str] = frozenset(), guard_cache: bool = False
) -> dict[str, Any]:
    """``Fetch.enable`` parameters: the main document at the response stage
    (every response with ``guard_cache``), its request when it must be
    rewritten, the blocked resource types; proxy challenges answered where
    the context has the proxy (not on a dedicated server, ``"proxy"`` in
    ``unsupported``: it sends the credentials itself)."""
    patterns: list[dict[str, str]] = [{"resourceType": "Document", "requestStage": "Response"}]
    if guard_cache:
        patterns.append({"requestStage": "Response"})
    context = spec.context
    proxy_auth = context is not None and bool(context.proxy_username) and "proxy" not in unsupported
    if spec.overrides_request or proxy_auth:
        # Lightpanda raises Fetch.authRequired only for a request paused at
        # the request stage; otherwise the proxy's 407 is the response.
        patterns.append({"resourceType": "Document", "requestStage": "Request"})
    for resource_type in sorted(spec.block_resources):
        patterns.append({"resourceType": cdp_resource_type(resource_type)})
    params: dict[str, Any] = {"patterns": patterns}
    if proxy_auth:
        params["handleAuthRequests"] = True
    return params
