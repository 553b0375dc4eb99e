"""One CDP connection: a WebSocket, commands matched to answers by id, events
dispatched by flat session id.

Only what a render needs: no domain wrappers, no type generation. Measured on
Lightpanda (``benchmarks/run.py --only raw_cdp_loop,raw_playwright_pool``, figures in
docs/performance.md): a loop of the nine commands a render needs over this kind of
client does ~270-300 pages/s with 4 connections, where Playwright's
``connect_over_cdp`` does ~100-110.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from websockets.exceptions import InvalidStatus, InvalidURI, WebSocketException

from scrapy_cdp_pool.browser.cdp import codec
from scrapy_cdp_pool.browser.cdp.messages import Malformed, excerpt, optional
from scrapy_cdp_pool.browser.cdp.transport import PayloadTooBig, Stream, open_pipe, open_stream
from scrapy_cdp_pool.browser.cdp.waiters import AnswerHandler, Relayed, Waiter
from scrapy_cdp_pool.errors import (
    CDPBacklogExceeded,
    CDPConnectError,
    CDPConnectionClosed,
    CDPMalformedMessage,
    CDPMessageTooLarge,
    CDPProtocolError,
    CDPRequestTooLarge,
    CDPTimeoutError,
)
from scrapy_cdp_pool.messages import redact_url, scrub_secrets

logger = logging.getLogger(__name__)

# websockets logs every frame at DEBUG, and Scrapy leaves loggers at DEBUG (its
# handler filters by LOG_LEVEL): ~25 log records a page, ~10% of a render's CPU.
# Frames get their own logger, quiet unless a user sets its level.
frames_logger = logging.getLogger("scrapy_cdp_pool.browser.cdp.frames")
if frames_logger.level == logging.NOTSET:
    frames_logger.setLevel(logging.INFO)

EventHandler = Callable[[str, dict[str, Any]], None]
"""Called as ``handler(method, params)`` for each event of a session, in the
order the server sent them, from the connection's reader task: it must not
block (put the event on a queue or set a flag)."""

_BROWSER = ""  # key of browser-level (session-less) event handlers

MAX_PENDING_COMMANDS = 4096
"""Most commands waiting for an answer on one connection. A render keeps a
few dozen in flight, plus one per request the page's browser paused on (each
answered within milliseconds by a working server); a server that floods
paused requests and answers none would otherwise grow one task and future
per event until the command timeout."""

MAX_UNCLAIMED_TARGETS = 1024
"""Most auto-attached targets remembered but not yet claimed by
:meth:`CDPConnection.take_attached_session` (the oldest are forgotten): a
page's pop-ups, or a flood of targets nobody created."""

#: bytes: a command at least this large that is pending when the connection
#: closes fails with :class:`CDPRequestTooLarge` (Lightpanda's default
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

    def __init__(
        self,
        url: str,
        command_timeout_s: float,
        max_message_bytes: int | None = None,
        max_pending: int = MAX_PENDING_COMMANDS,
    ) -> None:
        self.url = redact_url(url)  # for messages: a remote endpoint's token stays out
        self.command_timeout_s = command_timeout_s
        self.max_message_bytes = max_message_bytes
        self.max_pending = max_pending
        self._stream: Stream | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, Waiter]] = {}
        self._large: dict[int, int] = {}  # pending ids of large commands -> bytes
        self._handlers: dict[str, EventHandler] = {}
        self._close_callbacks: list[Callable[[], None]] = []
        self._closed = asyncio.Event()
        self._close_reason = "not closed"
        self._close_error: CDPConnectionClosed | None = None
        self.auto_attach = False
        self._attached: dict[str, str] = {}

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        open_timeout_s: float,
        command_timeout_s: float,
        max_message_bytes: int | None = None,
    ) -> CDPConnection:
        """Connect to ``url`` (``ws://host:port/...``, or
        ``ws+unix:///path/to/socket:/`` for a Unix socket). A message from the
        server over ``max_message_bytes`` (``None``: no limit;
        ``CDP_POOL_MAX_MESSAGE_MB`` in the pool) closes the connection with
        :class:`CDPMessageTooLarge`, a message that is not a CDP message with
        :class:`CDPMalformedMessage`, more than :data:`MAX_PENDING_COMMANDS`
        commands awaiting an answer with :class:`CDPBacklogExceeded`; each
        logs one warning naming ``url``.

        :raises CDPConnectError: refused, unreachable, timed out after
            ``open_timeout_s`` seconds, or the upgrade answered with an HTTP
            error (Lightpanda answers 503 past ``--cdp-max-connections``).
        """
        connection = cls(url, command_timeout_s, max_message_bytes)
        try:
            connection._stream = await open_stream(
                url,
                connection._on_message,
                connection._on_stream_lost,
                timeout_s=open_timeout_s,
                logger=frames_logger,
                max_size=max_message_bytes,
            )
        except InvalidStatus as e:
            raise CDPConnectError(
                f"{connection.url} refused the WebSocket upgrade with HTTP {e.response.status_code}"
            ) from None  # chained, the library's error would quote the URL whole
        except (OSError, TimeoutError, InvalidURI, WebSocketException) as e:
            raise CDPConnectError(
                f"cannot connect to {connection.url}: {scrub_secrets(repr(e), url)}"
            ) from None
        return connection

    @classmethod
    async def open_pipe(
        cls,
        name: str,
        write_fd: int,
        read_fd: int,
        *,
        command_timeout_s: float,
        max_message_bytes: int | None = None,
    ) -> CDPConnection:
        """A connection over a Chromium started with
        ``--remote-debugging-pipe``: ``write_fd`` feeds its fd 3, ``read_fd``
        reads its fd 4 (both owned by the connection from then on; closing it
        makes the browser exit). ``name`` stands for the URL in messages;
        ``max_message_bytes`` as for :meth:`open`."""
        connection = cls(name, command_timeout_s, max_message_bytes)
        connection._stream = await open_pipe(
            name,
            write_fd,
            read_fd,
            connection._on_message,
            connection._on_stream_lost,
            max_message_bytes,
        )
        return connection

    @property
    def closed(self) -> bool:
        """True once the WebSocket is closed, by either side."""
        return self._closed.is_set()

    @property
    def close_reason(self) -> str:
        return self._close_reason

    def close_error(self, prefix: str = "") -> CDPConnectionClosed | None:
        """A new instance of the named error the connection was closed with
        (:class:`CDPMessageTooLarge`, :class:`CDPMalformedMessage`,
        :class:`CDPBacklogExceeded`), its message after ``prefix``; ``None``
        when it is open or closed for another reason."""
        base = self._close_error
        if base is None:
            return None
        message = f"{prefix}: {base}" if prefix else str(base)
        if isinstance(base, CDPMessageTooLarge):
            return CDPMessageTooLarge(message, limit_bytes=base.limit_bytes)
        return type(base)(message)

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
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        msg_id = self._queue(method, params, session_id, future)
        if msg_id is None:
            return self._failed(method)
        timeout = self.command_timeout_s if timeout_s is None else timeout_s
        return self._answer(msg_id, method, future, timeout)

    def forward(
        self,
        method: str,
        params: dict[str, Any] | None,
        session_id: str | None,
        on_answer: AnswerHandler,
    ) -> int | None:
        """Queue one command for a relay (render/_live/live_relay.py): its answer
        goes to ``on_answer(result, None)`` or ``on_answer(None, error)``
        synchronously, from the reader, in order with the events around it
        (a future's callback would run after the events read with it). No
        deadline: the relay's lifetime bounds it (:meth:`forget`). Returns the
        command's id, or ``None`` when the connection is closed
        (``on_answer`` was then called with the error)."""
        msg_id = self._queue(method, params, session_id, Relayed(on_answer))
        if msg_id is None:
            on_answer(
                None,
                self.close_error(method)
                or CDPConnectionClosed(f"{method}: connection closed ({self._close_reason})"),
            )
        return msg_id

    def forget(self, msg_id: int) -> None:
        """Drop the answer of a command sent with :meth:`forward`, if it has not come."""
        self._pending.pop(msg_id, None)
        self._large.pop(msg_id, None)

    def _queue(
        self,
        method: str,
        params: dict[str, Any] | None,
        session_id: str | None,
        waiter: Waiter,
    ) -> int | None:
        """Write one command and register ``waiter`` for its answer; ``None``
        when it could not be written (closed, or the backlog is full)."""
        if self.closed or self._stream is None:
            return None
        if len(self._pending) >= self.max_pending:
            self._fail(
                CDPBacklogExceeded(
                    f"{self.url}: {len(self._pending)} commands without an answer "
                    f"(at most {self.max_pending}): the server does not answer"
                )
            )
            return None
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        self._pending[msg_id] = (method, waiter)
        data = codec.encode(message)
        if len(data) >= LARGE_MESSAGE:
            self._large[msg_id] = len(data)
        try:
            self._stream.send_text(data)
        except ConnectionError:
            self._pending.pop(msg_id, None)
            self._large.pop(msg_id, None)
            return None
        return msg_id

    async def _failed(self, method: str) -> dict[str, Any]:
        raise self.close_error(method) or CDPConnectionClosed(
            f"{method}: connection closed ({self._close_reason})"
        )

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
        if self._closed.is_set():
            return  # the rest of a batch read with a message that closed it
        try:
            message = codec.decode(raw)
        except ValueError as e:
            self._malformed(f"a message that is not JSON ({e})")
            return
        if not isinstance(message, dict):
            self._malformed(f"a message that is not a JSON object ({excerpt(raw)})")
            return
        try:
            self._dispatch(message)
        except Malformed as e:
            self._malformed(f"{e} ({excerpt(raw)})")

    def _dispatch(self, message: dict[str, Any]) -> None:
        """Route one message: an answer to its command's future, an event to
        its session's handler. The hottest function of a crawl (every message
        of every page goes through it): both common paths stay inline, the
        rare branches (an error answer, a target attached, a handler failing)
        are calls of their own.

        :raises Malformed: a field has the wrong type.
        """
        msg_id = message.get("id")
        if msg_id is not None:
            if not isinstance(msg_id, int) or isinstance(msg_id, bool):
                raise Malformed("an answer whose id is not an integer")
            error = optional(message, "error", dict)
            result = optional(message, "result", dict)
            entry = self._pending.get(msg_id)
            if entry is None or entry[1].done():
                return  # answer to a command that timed out or was cancelled
            if error is not None:
                _fail_command(entry, error)
            else:
                entry[1].set_result(result if result is not None else {})
            return
        method = message.get("method", "")
        if not isinstance(method, str):
            raise Malformed("an event whose method is not a string")
        params = optional(message, "params", dict) or {}
        session_id = optional(message, "sessionId", str)
        if session_id is None:
            if method == "Target.attachedToTarget" and self.auto_attach:
                self._note_attached(params)
                return
            if method == "Target.detachedFromTarget":
                session_id = optional(params, "sessionId", str)  # tell the session it is gone
        handler = self._handlers.get(session_id or _BROWSER)
        if handler is not None:
            try:
                handler(method, params)
            except (AttributeError, KeyError, TypeError, ValueError) as e:
                raise self._unreadable(method, e) from e

    def _note_attached(self, params: dict[str, Any]) -> None:
        """Keep the session of a target the browser attached by itself
        (``auto_attach``), for :meth:`take_attached_session`; at most
        :data:`MAX_UNCLAIMED_TARGETS` unclaimed, the oldest dropped."""
        info = optional(params, "targetInfo", dict) or {}
        target_id = optional(info, "targetId", str)
        attached = optional(params, "sessionId", str)
        if target_id and attached:
            self._attached[target_id] = attached
            if len(self._attached) > MAX_UNCLAIMED_TARGETS:
                del self._attached[next(iter(self._attached))]

    def _unreadable(self, method: str, error: Exception) -> Malformed:
        """A handler reading a field of the wrong type: named once, not an
        asyncio "Fatal error" traceback from data_received."""
        logger.debug("%s: handling %s failed", self.url, method, exc_info=error)
        return Malformed(f"an event {method} whose params could not be read ({error!r})")

    def _malformed(self, what: str) -> None:
        self._fail(CDPMalformedMessage(f"{self.url} sent {what}"))

    def _on_stream_lost(self, reason: str) -> None:
        failure = self._stream.failure if self._stream is not None else None
        if isinstance(failure, PayloadTooBig):
            limit = self.max_message_bytes or 0
            self._fail(
                CDPMessageTooLarge(
                    f"{self.url} sent a message larger than {limit / (1 << 20):g} MB",
                    limit_bytes=limit,
                )
            )
        elif failure is not None:  # a framing error, a text frame not UTF-8
            self._malformed(f"a WebSocket frame that breaks the protocol ({failure})")
        else:
            self._mark_closed(reason)

    def _fail(self, error: CDPConnectionClosed) -> None:
        """Close the connection because of what the server did: one warning
        naming the endpoint, and every command waiting, or sent later, fails
        with (a copy of) ``error``."""
        if self._closed.is_set():
            return
        logger.warning("Closing a CDP connection: %s", error)
        self._close_error = error
        self._mark_closed(f"closed: {error}")
        if self._stream is not None:
            self._stream.abort()

    def _mark_closed(self, reason: str) -> None:
        if self._closed.is_set():
            return
        self._close_reason = reason
        self._closed.set()
        for msg_id, (method, future) in list(self._pending.items()):
            if future.done():
                continue
            size = self._large.get(msg_id)
            if size is not None and reason != "closed by client" and self._close_error is None:
                future.set_exception(CDPRequestTooLarge(method, size, reason))
            else:
                future.set_exception(
                    self.close_error(method)
                    or CDPConnectionClosed(f"{method}: connection to {self.url} {reason}")
                )
        # Sessions waiting for events (a page waiting for its load event) learn
        # it at once instead of at their deadline.
        for handler in list(self._handlers.values()):
            handler(CONNECTION_CLOSED_EVENT, {"reason": reason})
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            callback()


def _fail_command(entry: tuple[str, Waiter], error: dict[str, Any]) -> None:
    """Fail a command's future with the error its answer carries."""
    method, future = entry
    code = error.get("code", 0)
    future.set_exception(
        CDPProtocolError(
            method, code if isinstance(code, int) else 0, str(error.get("message", ""))
        )
    )
