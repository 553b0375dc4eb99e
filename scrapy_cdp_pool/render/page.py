"""One page (target) in one fresh browser context, attached as a flat session.

:class:`Page` answers the browser's ``Fetch.requestPaused`` events for its
navigation: it rewrites the navigation request when the Scrapy request needs a
method, body or headers ``Page.navigate`` cannot send, aborts blocked resource
types, and reads every main-frame document response at the response stage, so
status and headers are the server's own and a non-HTML document (JSON, PDF,
image, attachment) is taken as its original bytes without being rendered.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Coroutine
from typing import Any

from scrapy_cdp_pool.cdp import CDPConnection, CDPConnectionClosed, CDPError, CDPProtocolError
from scrapy_cdp_pool.render.document import DocumentResponse, DocumentTracker
from scrapy_cdp_pool.render.errors import (
    NavigationFailed,
    PageCrashed,
    PageScriptError,
    ResponseTooLarge,
)
from scrapy_cdp_pool.render.spec import RenderSpec

logger = logging.getLogger(__name__)

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_NO_BODY_STATUSES = (204, 205, 304)
_READ_HTML = (
    "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '')"
    " + document.documentElement.outerHTML"
)
_CONTEXT_GONE = ("Execution context was destroyed", "Cannot find context", "context not found")


def is_raw_document(status: int, headers: list[tuple[str, str]]) -> bool:
    """Whether a main document is returned as its original bytes rather than
    rendered: no body by status, an attachment, or not HTML."""
    if status in _NO_BODY_STATUSES:
        return True
    content_type = disposition = ""
    for name, value in headers:
        lowered = name.lower()
        if lowered == "content-type":
            content_type = value.split(";")[0].strip().lower()
        elif lowered == "content-disposition":
            disposition = value.strip().lower()
    if disposition.startswith("attachment"):
        return True
    return bool(content_type) and content_type not in _HTML_TYPES


def _content_length(headers: list[tuple[str, str]]) -> int | None:
    for name, value in headers:
        if name.lower() == "content-length" and value.strip().isdigit():
            return int(value)
    return None


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
        self._override_pending = spec.overrides_request
        self.too_large: ResponseTooLarge | None = None
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
    ) -> Page:
        """Create a blank target in ``context_id``, attach to it, enable the
        domains a render needs and apply the identity's options (user agent,
        locale, headers...), pipelined in one round trip.

        ``network_events``: enable the Network domain (Chromium reports
        ``Set-Cookie`` only in its events).
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
        patterns: list[dict[str, str]] = [{"resourceType": "Document", "requestStage": "Response"}]
        if spec.overrides_request:
            patterns.append({"resourceType": "Document", "requestStage": "Request"})
        for resource_type in sorted(spec.block_resources):
            patterns.append({"resourceType": _cdp_resource_type(resource_type)})
        context = spec.context
        fetch: dict[str, Any] = {"patterns": patterns}
        if context is not None and context.proxy_username:
            fetch["handleAuthRequests"] = True
        commands = [page.command("Page.enable"), page.command("Fetch.enable", fetch)]
        if network_events or (context is not None and context.needs_network_domain):
            commands.append(page.command("Network.enable"))
        if context is not None:
            for method, params in context.page_commands(default_user_agent):
                commands.append(page.command(method, params))
        if spec.cookies:
            cookies = [{"name": n, "value": v, "url": spec.url} for n, v in spec.cookies]
            commands.append(page.command("Network.setCookies", {"cookies": cookies}))
        setup = asyncio.gather(*commands)
        if context is None:
            # Nothing identity-specific to apply first: Page.navigate goes out
            # in the same write as the enables (the server handles them in order).
            page._setup = setup
        else:
            await setup
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
            task = asyncio.get_running_loop().create_task(self._on_paused(params))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif method == "Fetch.authRequired":
            task = asyncio.get_running_loop().create_task(self._on_auth(params))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            self.tracker.on_event(method, params)

    async def _on_paused(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        resource_type = str(params.get("resourceType", "Other")).lower()
        try:
            if "responseStatusCode" in params or "responseErrorReason" in params:
                await self._on_response(params)
            elif resource_type in self.spec.block_resources:
                blocked = self.tracker.blocked
                blocked[resource_type] = blocked.get(resource_type, 0) + 1
                await self.command(
                    "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
                )
            elif (
                self._override_pending
                and resource_type == "document"
                and params.get("frameId") == self.target_id
            ):
                self._override_pending = False
                await self.command("Fetch.continueRequest", self._overrides(params))
            else:
                await self.command("Fetch.continueRequest", {"requestId": request_id})
        except CDPError as e:
            # The page moved on (navigated, closed) before the answer: nothing to do.
            logger.debug("%s: answering a paused request: %r", self.spec.url, e)
        except ResponseTooLarge as e:
            self.too_large = e
            self.tracker.on_failure(str(e))
            await self._abort(request_id)

    async def _on_auth(self, params: dict[str, Any]) -> None:
        """Answer a proxy's authentication challenge with the identity's
        credentials (never a server's: those are cancelled)."""
        context = self.spec.context
        challenge = params.get("authChallenge", {})
        response: dict[str, Any] = {"response": "CancelAuth"}
        if context is not None and context.proxy_username and challenge.get("source") == "Proxy":
            response = {
                "response": "ProvideCredentials",
                "username": context.proxy_username,
                "password": context.proxy_password or "",
            }
        try:
            await self.command(
                "Fetch.continueWithAuth",
                {"requestId": params["requestId"], "authChallengeResponse": response},
            )
        except CDPError as e:
            logger.debug("%s: answering an auth challenge: %r", self.spec.url, e)

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

    def _overrides(self, params: dict[str, Any]) -> dict[str, Any]:
        spec = self.spec
        # The browser adds cookies from the context's jar itself (Lightpanda
        # mangles a Cookie header handed back to it: its last value is lost).
        headers = {
            name: value
            for name, value in params.get("request", {}).get("headers", {}).items()
            if name.lower() != "cookie"
        }
        lowered = {name.lower(): name for name in headers}
        for name, _ in spec.headers:
            headers.pop(lowered.get(name.lower(), name), None)
        merged = [{"name": k, "value": v} for k, v in headers.items()]
        merged.extend({"name": name, "value": value} for name, value in spec.headers)
        answer: dict[str, Any] = {
            "requestId": params["requestId"],
            "method": spec.method,
            "headers": merged,
        }
        if spec.body:
            answer["postData"] = base64.b64encode(spec.body).decode("ascii")
        return answer

    async def _on_response(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        is_main = (
            params.get("frameId") == self.target_id
            and str(params.get("resourceType", "")).lower() == "document"
            and "responseErrorReason" not in params
        )
        if not is_main:
            await self.command("Fetch.continueRequest", {"requestId": request_id})
            return
        status = int(params["responseStatusCode"])
        headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
        url = params.get("request", {}).get("url", self.spec.url)
        location = next((v for k, v in headers if k.lower() == "location"), None)
        if 300 <= status < 400 and location:
            self.tracker.on_redirect(url, status)
            await self.command("Fetch.continueRequest", {"requestId": request_id})
            return
        maxsize = self.spec.maxsize
        expected = _content_length(headers)
        if maxsize and expected is not None and expected > maxsize:
            raise ResponseTooLarge(self.spec.url, expected, maxsize, expected=True)
        document = DocumentResponse(
            url=url, status=status, headers=headers, network_id=params.get("networkId"),
            received_at=time.monotonic(),
        )  # fmt: skip
        if not is_raw_document(status, headers):
            self.tracker.on_document(document)
            await self.command("Fetch.continueRequest", {"requestId": request_id})
            return
        body = b""
        if status not in _NO_BODY_STATUSES and params.get("request", {}).get("method") != "HEAD":
            result = await self.command("Fetch.getResponseBody", {"requestId": request_id})
            data = result.get("body", "")
            body = base64.b64decode(data) if result.get("base64Encoded") else data.encode()
            if maxsize and len(body) > maxsize:
                raise ResponseTooLarge(self.spec.url, len(body), maxsize, expected=False)
        document.body = body
        self.tracker.on_document(document)
        await self._abort(request_id)  # taken as bytes: neither render nor download it

    async def _abort(self, request_id: str) -> None:
        try:
            await self.command(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "Aborted"}
            )
        except CDPError as e:
            logger.debug("%s: aborting a paused request: %r", self.spec.url, e)


def _cdp_resource_type(name: str) -> str:
    special = {"xhr": "XHR", "texttrack": "TextTrack", "eventsource": "EventSource",
               "websocket": "WebSocket", "signedexchange": "SignedExchange",
               "cspviolationreport": "CSPViolationReport"}  # fmt: skip
    return special.get(name, name.capitalize())
