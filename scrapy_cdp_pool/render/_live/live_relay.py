"""A private CDP relay that shows Playwright one request's page and nothing else.

Playwright's ``connect_over_cdp`` needs a ``ws://`` URL, and the plugin's
servers have none (Lightpanda serves CDP on a Unix socket with one browser
context per connection, Chromium on a pipe its pooled connections share). So
for ``meta["cdp_include_page"]`` the request's own connection is relayed:

- it listens on 127.0.0.1 at a path of 32 random bytes
  (:func:`secrets.token_urlsafe`), the URL handed to Playwright only (never
  logged), accepts one WebSocket and stops listening; anything else gets 404;
- Playwright's commands to the page's sessions (its own session on the
  target, attached when Playwright asks to auto-attach, and the sessions
  Chromium attaches under it: frames, workers) are sent on the request's
  connection, and their answers and events come back in the order the server
  sent them (:meth:`CDPConnection.forward`);
- browser-level commands are answered here or scoped to the request's context
  (``browserContextId`` replaced by the request's): Playwright sees one
  browser with one context and one page. What would reach further
  (``Target.createTarget``, ``Target.createBrowserContext``, another target
  or session) is answered with an error naming the command.

:attr:`LiveRelay.before_close`, when set, is awaited before the page's own
close (``Target.closeTarget``, ``Page.close``) is passed on: the profile's
localStorage is read there (render/_request/storage_state.py).

:attr:`LiveRelay.done` is set when the page's target is gone (the callback's
``page.close()``), when Playwright disconnects, or when the connection closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from scrapy_cdp_pool.browser.cdp.client import CONNECTION_CLOSED_EVENT, CDPConnection
from scrapy_cdp_pool.errors import CDPProtocolError

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.live_relay")
# websockets logs each server's start, connection and stop at INFO: quiet
# unless a user sets this logger's level.
ws_logger = logging.getLogger("scrapy_cdp_pool.render.live_relay.websocket")
if ws_logger.level == logging.NOTSET:
    ws_logger.setLevel(logging.WARNING)

#: browser-level commands whose effect is one context's: sent with the
#: request's ``browserContextId`` (whatever Playwright gave)
CONTEXT_SCOPED = frozenset(
    {
        "Storage.getCookies",
        "Storage.setCookies",
        "Storage.clearCookies",
        "Browser.grantPermissions",
        "Browser.resetPermissions",
        "Browser.setPermission",
    }
)
#: browser-level commands answered with ``{}`` and not sent: Playwright sets
#: downloads up for its default context; the live page does not download
NOT_SENT = frozenset({"Browser.setDownloadBehavior", "Target.setDiscoverTargets"})
#: JSON-RPC "server error", as Chromium answers a command it refuses
_REFUSED = -32000


class LiveRelay:
    """One request's page (``target_id`` in ``context_id``), relayed from
    ``cdp`` to one Playwright client. :meth:`start` returns the URL."""

    def __init__(
        self,
        cdp: CDPConnection,
        context_id: str,
        target_id: str,
        url: str,
        max_message_bytes: int | None,
    ) -> None:
        self.cdp = cdp
        self.context_id = context_id
        self.target_id = target_id
        self.page_url = url
        self.max_message_bytes = max_message_bytes
        self.token = secrets.token_urlsafe(32)
        #: set when the page is gone, Playwright left or the connection closed
        self.done = asyncio.Event()
        #: why :attr:`done` was set
        self.reason = ""
        #: connections refused (wrong path, a second client)
        self.refused = 0
        self.page_session: str | None = None
        self._sessions: set[str] = set()
        self._inflight: set[int] = set()
        self._outbox: asyncio.Queue[str | None] = asyncio.Queue()
        self._server: Server | None = None
        self._client: ServerConnection | None = None
        self._browser_target = secrets.token_hex(16).upper()
        #: per session, (frame, world name, default) -> newest context id
        self._worlds: dict[str, dict[tuple[str, str, bool], int]] = {}
        #: awaited (once) before the page's close is passed on; its failure
        #: is logged and the close goes on
        self.before_close: Callable[[], Awaitable[None]] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen; the ``ws://127.0.0.1:<port>/<token>`` URL for Playwright.

        :raises OSError: cannot listen on 127.0.0.1."""
        self._server = await serve(
            self._serve,
            "127.0.0.1",
            0,
            process_request=self._check,
            max_size=self.max_message_bytes,
            compression=None,
            ping_interval=None,
            logger=ws_logger,
        )
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}/{self.token}"

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        good = hmac.compare_digest(request.path.encode(), ("/" + self.token).encode())
        if not good or self._client is not None:
            self.refused += 1
            return Response(404, "Not Found", Headers({"Content-Length": "0"}), b"")
        self._client = connection
        if self._server is not None:
            self._server.close(close_connections=False)  # one client only
        return None

    async def _serve(self, connection: ServerConnection) -> None:
        writer = asyncio.get_running_loop().create_task(self._write(connection))
        try:
            async for raw in connection:
                try:
                    message = json.loads(raw)
                    self._on_client(message)
                except (ValueError, TypeError, KeyError, AttributeError):
                    logger.debug("live page relay: a message it cannot read", exc_info=True)
        except ConnectionClosed:
            pass
        finally:
            self.finish("Playwright disconnected")
            self._outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await writer

    async def _write(self, connection: ServerConnection) -> None:
        while (text := await self._outbox.get()) is not None:
            try:
                await connection.send(text)
            except ConnectionClosed:
                return

    def _send(self, message: dict[str, Any]) -> None:
        self._outbox.put_nowait(json.dumps(message))

    def _reply(
        self,
        client_id: Any,
        session: str | None,
        result: dict[str, Any] | None,
        error: BaseException | str | None = None,
    ) -> None:
        message: dict[str, Any] = {"id": client_id}
        if session:
            message["sessionId"] = session
        if error is None:
            message["result"] = result or {}
        elif isinstance(error, CDPProtocolError):
            message["error"] = {"code": error.code, "message": error.message}
        else:
            message["error"] = {"code": _REFUSED, "message": str(error)}
        self._send(message)

    # Playwright -> server ----------------------------------------------

    def _on_client(self, message: dict[str, Any]) -> None:
        client_id = message["id"]
        method = message["method"]
        params = message.get("params") or {}
        session = message.get("sessionId")
        if not isinstance(method, str) or not isinstance(params, dict):
            raise TypeError("not a CDP command")
        if session is None:
            self._browser_command(client_id, method, params)
        elif session == self.page_session and method == "Page.close":
            self._close_page(client_id, method, params, session)
        elif session in self._sessions:
            self._forward(client_id, method, params, session)
        else:
            self._reply(client_id, session, None, f"{method}: no session with given id")

    def _forward(
        self, client_id: Any, method: str, params: dict[str, Any], session: str | None
    ) -> None:
        msg_id: int | None = None

        def on_answer(result: dict[str, Any] | None, error: BaseException | None) -> None:
            if msg_id is not None:
                self._inflight.discard(msg_id)
            self._reply(client_id, session, result, error)

        msg_id = self.cdp.forward(method, params, session, on_answer)
        if msg_id is not None:
            self._inflight.add(msg_id)

    def _browser_command(self, client_id: Any, method: str, params: dict[str, Any]) -> None:
        if method == "Browser.getVersion":
            self._forward(client_id, method, {}, None)
        elif method == "Target.setAutoAttach":
            self._attach_page(client_id)
        elif method == "Target.getTargetInfo":
            target = params.get("targetId")
            if target is None:
                self._reply(client_id, None, {"targetInfo": self._browser_info()})
            elif target == self.target_id:
                self._forward(client_id, method, {"targetId": target}, None)
            else:
                self._reply(client_id, None, None, f"{method}: no target with given id")
        elif method == "Target.getTargets":
            self._reply(client_id, None, {"targetInfos": [self._page_info()]})
        elif method == "Target.getBrowserContexts":
            self._reply(client_id, None, {"browserContextIds": [self.context_id]})
        elif method in CONTEXT_SCOPED:
            self._forward(client_id, method, {**params, "browserContextId": self.context_id}, None)
        elif method in NOT_SENT:
            self._reply(client_id, None, {})
        elif method in ("Target.closeTarget", "Target.activateTarget"):
            self._page_target_command(client_id, method, params)
        elif method == "Target.detachFromTarget":
            if params.get("sessionId") not in self._sessions:
                self._reply(client_id, None, None, f"{method}: no session with given id")
            else:
                self._forward(client_id, method, {"sessionId": params["sessionId"]}, None)
        elif method == "Browser.close":
            # The browser is the crawl's: Playwright's browser.close() only
            # disconnects (the page is closed with it, see LivePage).
            self._reply(client_id, None, {})
            self.finish("Playwright closed its browser")
        else:
            self._reply(
                client_id,
                None,
                None,
                f"{method} is not available through a live page (meta['cdp_include_page']): "
                "it shows the request's one page and context",
            )

    def _page_target_command(self, client_id: Any, method: str, params: dict[str, Any]) -> None:
        if params.get("targetId") != self.target_id:
            self._reply(client_id, None, None, f"{method}: no target with given id")
        elif method == "Target.closeTarget":
            self._close_page(client_id, method, {"targetId": self.target_id}, None)
        else:
            self._forward(client_id, method, {"targetId": self.target_id}, None)

    def _close_page(
        self, client_id: Any, method: str, params: dict[str, Any], session: str | None
    ) -> None:
        """Pass the page's close on, after :attr:`before_close`."""
        hook, self.before_close = self.before_close, None
        if hook is None:
            self._forward(client_id, method, params, session)
            return

        async def close_after_hook() -> None:
            try:
                await hook()
            except Exception:
                logger.debug("live page relay: before the page's close", exc_info=True)
            self._forward(client_id, method, params, session)

        task = asyncio.get_running_loop().create_task(close_after_hook())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _attach_page(self, client_id: Any) -> None:
        """Attach a session of Playwright's own to the page and announce it,
        as a browser does for auto-attach, before answering."""
        if self.page_session is not None:
            self._reply(client_id, None, {})
            return

        def on_attached(result: dict[str, Any] | None, error: BaseException | None) -> None:
            if result is None:
                self._reply(client_id, None, None, error)
                return
            session = result["sessionId"]
            self.page_session = session
            self._subscribe(session)
            self._send(
                {
                    "method": "Target.attachedToTarget",
                    "params": {
                        "sessionId": session,
                        "targetInfo": self._page_info(),
                        "waitingForDebugger": False,
                    },
                }
            )
            self._reply(client_id, None, {})

        self.cdp.forward(
            "Target.attachToTarget",
            {"targetId": self.target_id, "flatten": True},
            None,
            on_attached,
        )

    def _page_info(self) -> dict[str, Any]:
        return {
            "targetId": self.target_id,
            "type": "page",
            "title": "",
            "url": self.page_url,
            "attached": True,
            "canAccessOpener": False,
            "browserContextId": self.context_id,
        }

    def _browser_info(self) -> dict[str, Any]:
        return {
            "targetId": self._browser_target,
            "type": "browser",
            "title": "",
            "url": "",
            "attached": True,
            "canAccessOpener": False,
        }

    # server -> Playwright ----------------------------------------------

    def _subscribe(self, session: str) -> None:
        self._sessions.add(session)

        def on_event(method: str, params: dict[str, Any]) -> None:
            if method == CONNECTION_CLOSED_EVENT:
                self.finish(f"the browser connection closed ({params.get('reason')})")
                return
            if method == "Runtime.executionContextCreated" and self._stale(session, params):
                return
            if method == "Runtime.executionContextsCleared":
                self._worlds.pop(session, None)
            if method == "Target.attachedToTarget":
                child = params.get("sessionId")
                if isinstance(child, str):
                    self._subscribe(child)
            elif method == "Target.detachedFromTarget":
                gone = params.get("sessionId")
                if gone == session:  # the browser-level event of this session
                    self._sessions.discard(session)
                    self.cdp.unsubscribe(session)
                    self._send({"method": method, "params": params})
                    if session == self.page_session:
                        self.finish("the page was closed")
                    return
                if isinstance(gone, str):
                    self._sessions.discard(gone)
                    self.cdp.unsubscribe(gone)
            self._send({"method": method, "params": params, "sessionId": session})

        self.cdp.subscribe(session, on_event)

    def _stale(self, session: str, params: dict[str, Any]) -> bool:
        """Whether an ``executionContextCreated`` announces a context older
        than one already announced for the same frame and world. Lightpanda,
        on a second session's ``Runtime.enable``, announces the page's live
        context and then the blank page's, long gone: Playwright would take
        the last as the page's and fail with "ContextNotFound"."""
        context = params.get("context") or {}
        aux = context.get("auxData") or {}
        key = (str(aux.get("frameId")), str(context.get("name")), bool(aux.get("isDefault")))
        context_id = context.get("id")
        if not isinstance(context_id, int):
            return False
        worlds = self._worlds.setdefault(session, {})
        newest = worlds.get(key)
        if newest is not None and context_id < newest:
            return True
        worlds[key] = context_id
        return False

    # lifetime ----------------------------------------------------------

    def finish(self, reason: str) -> None:
        """Set :attr:`done` with ``reason``, unless it is set already."""
        if not self.done.is_set():
            self.reason = reason
            self.done.set()

    async def close(self) -> None:
        """Stop listening, end Playwright's connection, drop the sessions'
        handlers and the answers still awaited. The page itself is the
        caller's (disposed with its context). Idempotent."""
        self.finish("closed")
        for task in list(self._tasks):
            task.cancel()
        for msg_id in self._inflight:
            self.cdp.forget(msg_id)
        self._inflight.clear()
        for session in self._sessions:
            self.cdp.unsubscribe(session)
        self._sessions.clear()
        if self._client is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1):
                    await self._client.close()
            self._client.transport.abort()  # noop once closed
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await self._server.wait_closed()
        if self.refused:
            logger.warning(
                "Live page relay refused %d connection(s) without its token", self.refused
            )
