"""One CDP connection: a WebSocket, commands matched to answers by id, events
dispatched by flat session id.

Only what a render needs: no domain wrappers, no type generation. Measured on
Lightpanda (``../shared/DESIGN.md``): a loop of the nine commands a render needs
over this kind of client does ~270 pages/s with 4 connections, where Playwright's
``connect_over_cdp`` does ~110.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from websockets.exceptions import InvalidStatus, InvalidURI, WebSocketException

from scrapy_cdp_pool.cdp.errors import (
    CDPConnectError,
    CDPConnectionClosed,
    CDPMessageTooLarge,
    CDPProtocolError,
    CDPTimeoutError,
)
from scrapy_cdp_pool.cdp.transport import WebSocketStream, open_stream

logger = logging.getLogger(__name__)

# websockets logs every frame at DEBUG, and Scrapy leaves loggers at DEBUG (its
# handler filters by LOG_LEVEL): ~25 log records a page, ~10% of a render's CPU.
# Frames get their own logger, quiet unless a user sets its level.
frames_logger = logging.getLogger("scrapy_cdp_pool.cdp.frames")
if frames_logger.level == logging.NOTSET:
    frames_logger.setLevel(logging.INFO)

EventHandler = Callable[[str, dict[str, Any]], None]
"""Called as ``handler(method, params)`` for each event of a session, in the
order the server sent them, from the connection's reader task: it must not
block (put the event on a queue or set a flag)."""

_BROWSER = ""  # key of browser-level (session-less) event handlers

#: bytes: a command at least this large that is pending when the connection
#: closes fails with :class:`CDPMessageTooLarge` (Lightpanda's default
#: ``--cdp-max-message-size``, the smallest limit known)
LARGE_MESSAGE = 1024 * 1024

CONNECTION_CLOSED_EVENT = "CDPConnection.closed"
"""A pseudo-event every subscribed handler gets once when the connection
closes, with params ``{"reason": str}``."""


class CDPConnection:
    """A WebSocket to a CDP server (Lightpanda ``serve`` or Chromium).

    Open with :meth:`open`. :meth:`send` is safe to call from many tasks at once;
    commands are written in call order, so independent commands can be pipelined
    by creating the ``send`` tasks before awaiting any of them.
    """

    def __init__(self, url: str, command_timeout_s: float) -> None:
        self.url = url
        self.command_timeout_s = command_timeout_s
        self._stream: WebSocketStream | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._large: dict[int, int] = {}  # pending ids of large commands -> bytes
        self._handlers: dict[str, EventHandler] = {}
        self._close_callbacks: list[Callable[[], None]] = []
        self._closed = asyncio.Event()
        self._close_reason = "not closed"
        self.auto_attach = False
        self._attached: dict[str, str] = {}

    @classmethod
    async def open(
        cls, url: str, *, open_timeout_s: float, command_timeout_s: float
    ) -> CDPConnection:
        """Connect to ``url`` (``ws://host:port/...``).

        :raises CDPConnectError: refused, unreachable, timed out after
            ``open_timeout_s`` seconds, or the upgrade answered with an HTTP
            error (Lightpanda answers 503 past ``--cdp-max-connections``).
        """
        connection = cls(url, command_timeout_s)
        try:
            connection._stream = await open_stream(
                url,
                connection._on_message,
                connection._mark_closed,
                timeout_s=open_timeout_s,
                logger=frames_logger,
            )
        except InvalidStatus as e:
            raise CDPConnectError(
                f"{url} refused the WebSocket upgrade with HTTP {e.response.status_code}"
            ) from e
        except (OSError, TimeoutError, InvalidURI, WebSocketException) as e:
            raise CDPConnectError(f"cannot connect to {url}: {e!r}") from e
        return connection

    @property
    def closed(self) -> bool:
        """True once the WebSocket is closed, by either side."""
        return self._closed.is_set()

    @property
    def close_reason(self) -> str:
        return self._close_reason

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once when the connection closes, by either side."""
        if self.closed:
            callback()
        else:
            self._close_callbacks.append(callback)

    async def enable_auto_attach(self) -> None:
        """Have the server attach a flat session to each page it creates
        (``Target.setAutoAttach``), which saves the ``Target.attachToTarget``
        round trip per page: see :meth:`take_attached_session`. Only for
        servers where a connection sees its own pages only (Lightpanda): on
        Chromium every connection would attach to every page of the browser."""
        await self.send(
            "Target.setAutoAttach",
            {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
        )
        self.auto_attach = True

    def take_attached_session(self, target_id: str) -> str | None:
        """The session the server auto-attached to ``target_id``, if it did.
        The server sends that event before its answer to ``createTarget``."""
        return self._attached.pop(target_id, None)

    def subscribe(self, session_id: str | None, handler: EventHandler) -> None:
        """Route the events of ``session_id`` (``None``: browser-level events)
        to ``handler``. One handler per session; a new one replaces the old."""
        self._handlers[session_id or _BROWSER] = handler

    def unsubscribe(self, session_id: str | None) -> None:
        self._handlers.pop(session_id or _BROWSER, None)

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Send one command and return its ``result`` object.

        :raises CDPProtocolError: the server answered with an error.
        :raises CDPTimeoutError: no answer within ``timeout_s`` seconds
            (default: the connection's ``command_timeout_s``).
        :raises CDPConnectionClosed: the connection closed first.
        """
        return await self.post(method, params, session_id, timeout_s)

    def post(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str | None = None,
        timeout_s: float | None = None,
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """Queue one command now (it is written at the end of this event-loop
        turn, in order with every other command) and return a coroutine that
        waits for its answer, as :meth:`send` does."""
        if self.closed or self._stream is None:
            return self._failed(method)
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (method, future)
        timeout = self.command_timeout_s if timeout_s is None else timeout_s
        data = json.dumps(message).encode()
        if len(data) >= LARGE_MESSAGE:
            self._large[msg_id] = len(data)
        try:
            self._stream.send_text(data)
        except ConnectionError:
            self._pending.pop(msg_id, None)
            self._large.pop(msg_id, None)
            return self._failed(method)
        return self._answer(msg_id, method, future, timeout)

    async def _failed(self, method: str) -> dict[str, Any]:
        raise CDPConnectionClosed(f"{method}: connection closed ({self._close_reason})")

    async def _answer(
        self, msg_id: int, method: str, future: asyncio.Future[dict[str, Any]], limit_s: float
    ) -> dict[str, Any]:
        try:
            async with asyncio.timeout(limit_s):
                return await future
        except TimeoutError as e:
            raise CDPTimeoutError(method, limit_s) from e
        finally:
            self._pending.pop(msg_id, None)
            self._large.pop(msg_id, None)

    async def close(self) -> None:
        """Close the WebSocket; commands waiting for an answer fail with
        :class:`CDPConnectionClosed`. Idempotent."""
        self._mark_closed("closed by client")
        if self._stream is not None:
            self._stream.close()

    def _on_message(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError as e:
            logger.warning("%s sent a message that is not JSON (%r); closing", self.url, e)
            self._mark_closed(f"broken: {e!r}")
            if self._stream is not None:
                self._stream.abort()
            return
        self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        msg_id = message.get("id")
        if msg_id is not None:
            entry = self._pending.get(msg_id)
            if entry is None or entry[1].done():
                return  # answer to a command that timed out or was cancelled
            method, future = entry
            error = message.get("error")
            if error is not None:
                future.set_exception(
                    CDPProtocolError(method, error.get("code", 0), error.get("message", ""))
                )
            else:
                future.set_result(message.get("result", {}))
            return
        method = message.get("method", "")
        params = message.get("params", {})
        session_id = message.get("sessionId")
        if method == "Target.attachedToTarget" and self.auto_attach and session_id is None:
            target_id = params.get("targetInfo", {}).get("targetId")
            if target_id and params.get("sessionId"):
                self._attached[target_id] = params["sessionId"]
            return
        if session_id is None and method == "Target.detachedFromTarget":
            session_id = params.get("sessionId")  # tell the session it is gone
        handler = self._handlers.get(session_id or _BROWSER)
        if handler is not None:
            handler(method, params)

    def _mark_closed(self, reason: str) -> None:
        if self._closed.is_set():
            return
        self._close_reason = reason
        self._closed.set()
        error = CDPConnectionClosed(f"connection to {self.url} {reason}")
        for msg_id, (method, future) in list(self._pending.items()):
            if future.done():
                continue
            size = self._large.get(msg_id)
            if size is not None and reason != "closed by client":
                future.set_exception(CDPMessageTooLarge(method, size, reason))
            else:
                future.set_exception(CDPConnectionClosed(f"{method}: {error}"))
        # Sessions waiting for events (a page waiting for its load event) learn
        # it at once instead of at their deadline.
        for handler in list(self._handlers.values()):
            handler(CONNECTION_CLOSED_EVENT, {"reason": reason})
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            callback()
