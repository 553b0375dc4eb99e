"""A client WebSocket as an asyncio protocol over websockets' sans-I/O core.

Why not ``websockets.asyncio.client``: on the render path every message counts.
Its asyncio layer writes each frame with its own ``send()`` system call and
passes each received message through an assembler queue. Here frames written in
the same event-loop turn (pipelined CDP commands) go out in one write, and a
received message is handed to the caller straight from ``data_received``.
Framing, masking, the opening and closing handshakes and ping replies are
websockets' own (``websockets.client.ClientProtocol``), the documented way to
embed it in another I/O layer.

Three channels: a WebSocket over TCP (``ws://``, ``wss://``: remote
endpoints), a WebSocket over a Unix socket (``ws+unix:///path/to/sock:/``, the
form Lightpanda advertises for ``serve --unix-socket``: the socket's path, a
colon, the resource), and Chromium's ``--remote-debugging-pipe``
(:class:`PipeStream`: JSON messages each ended by a NUL byte).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import Callable
from typing import Protocol, cast

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidState, InvalidStatus, InvalidURI, PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import WebSocketURI, parse_uri

from scrapy_cdp_pool.messages import redact_url

MessageHandler = Callable[[bytes], None]
LostHandler = Callable[[str], None]

UNIX_SCHEME = "ws+unix://"


def unix_socket_url(path: str, resource: str = "/") -> str:
    """The endpoint naming a WebSocket on the Unix socket at ``path`` (absolute)."""
    return f"{UNIX_SCHEME}{path}:{resource}"


def split_unix_url(url: str) -> tuple[str, str]:
    """``(socket path, resource)`` of a ``ws+unix:///path:/resource`` URL.

    :raises InvalidURI: not that form (the path must be absolute).
    """
    rest = url[len(UNIX_SCHEME) :] if url.startswith(UNIX_SCHEME) else ""
    path, sep, resource = rest.partition(":")
    if not path.startswith("/") or not sep:
        raise InvalidURI(url, "expected ws+unix:///absolute/path/to/socket:/resource")
    return path, resource or "/"


class Stream(Protocol):
    """What :class:`~scrapy_cdp_pool.browser.cdp.client.CDPConnection` needs of a channel."""

    url: str
    closed: bool
    #: why this side failed the channel (``PayloadTooBig``...), or ``None``
    failure: Exception | None

    def send_text(self, data: bytes) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


class WebSocketStream(asyncio.Protocol):
    """One client WebSocket. Create with :func:`open_stream`."""

    def __init__(
        self,
        url: str,
        on_message: MessageHandler,
        on_lost: LostHandler,
        logger: logging.Logger,
        max_size: int | None = None,
    ) -> None:
        self.url = redact_url(url)  # names it in messages
        # websockets checks max_size against each frame's announced length
        # before reading its payload, and against the sum of a fragmented
        # message's frames, so neither one huge frame nor endless fragments
        # are buffered past it (here or in self._fragments).
        self._ws = ClientProtocol(_ws_uri(url), max_size=max_size, logger=logger)
        self.max_size = max_size
        #: why the connection was failed by this side (``PayloadTooBig``: a
        #: message over ``max_size``), read by the owner in ``on_lost``
        self.failure: Exception | None = None
        self._on_message = on_message
        self._on_lost = on_lost
        self._transport: asyncio.Transport | None = None
        self._opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._fragments: list[bytes] = []
        self._flush_scheduled = False
        self.closed = False

    # asyncio.Protocol --------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._ws.send_request(self._ws.connect())
        self._write_pending()

    def data_received(self, data: bytes) -> None:
        if self.failure is not None:
            return  # failed: what still arrives is dropped
        self._ws.receive_data(data)
        for event in self._ws.events_received():
            if isinstance(event, Frame):
                self._on_frame(event)
            elif isinstance(event, Response) and not self._opened.done():
                error = self._ws.handshake_exc
                if error is None:
                    self._opened.set_result(None)
                else:
                    self._opened.set_exception(error)
        if self._ws.parser_exc is not None:
            self._fail(self._ws.parser_exc)
            return
        self._write_pending()  # pongs, close replies

    def _fail(self, error: Exception) -> None:
        """websockets failed the connection (a message over ``max_size``:
        ``PayloadTooBig``, code 1009; a framing error): send its close frame,
        drop the socket at once (a hostile server may go on sending and never
        close its side) and tell the owner."""
        self.failure = error
        self._fragments = []
        self._write_pending()
        self.abort()
        if not self.closed:
            self.closed = True
            if not self._opened.done():
                self._opened.set_exception(ConnectionError(str(error)))
            self._on_lost(f"failed: {error}")

    def eof_received(self) -> bool | None:
        self._ws.receive_eof()
        self._write_pending()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.failure is not None:
            return  # the owner was told in _fail
        self.closed = True
        reason = f"connection lost: {exc!r}" if exc else "closed by the server"
        if not self._opened.done():
            self._opened.set_exception(ConnectionError(reason))
        self._on_lost(reason)

    # Sending -----------------------------------------------------------

    def send_text(self, data: bytes) -> None:
        """Queue one text message; messages queued in the same event-loop turn
        are written together at the end of it.

        :raises ConnectionError: the connection is closed.
        """
        if self.closed or self._transport is None or self._transport.is_closing():
            raise ConnectionError(f"{self.url}: connection closed")
        self._ws.send_text(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def close(self) -> None:
        """Send a close frame and close the TCP connection once it is written."""
        if self._transport is None or self._transport.is_closing():
            return
        with contextlib.suppress(InvalidState):  # already closing: nothing to announce
            self._ws.send_close()
        self._write_pending()
        self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    async def wait_open(self) -> None:
        await self._opened

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._write_pending()

    def _write_pending(self) -> None:
        chunks = self._ws.data_to_send()
        if not chunks or self._transport is None or self._transport.is_closing():
            return
        data = b"".join(chunks)
        if data:
            self._transport.write(data)
        if chunks[-1] == b"" and self._transport.can_write_eof():
            self._transport.write_eof()

    def _on_frame(self, frame: Frame) -> None:
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
            if frame.fin and not self._fragments:
                self._on_message(bytes(frame.data))
            elif frame.fin:
                self._fragments.append(bytes(frame.data))
                message = b"".join(self._fragments)
                self._fragments = []
                self._on_message(message)
            else:
                self._fragments.append(bytes(frame.data))


def _ws_uri(url: str) -> WebSocketURI:
    if url.startswith(UNIX_SCHEME):
        # The host only fills the Host header (Lightpanda accepts "localhost").
        return parse_uri("ws://localhost" + split_unix_url(url)[1])
    return parse_uri(url)


async def open_stream(
    url: str,
    on_message: MessageHandler,
    on_lost: LostHandler,
    *,
    timeout_s: float,
    logger: logging.Logger,
    max_size: int | None = None,
) -> WebSocketStream:
    """Connect to ``url`` (``ws://``, ``wss://`` or ``ws+unix://``) and
    complete the opening handshake within ``timeout_s`` seconds. A received message over
    ``max_size`` bytes (``None``: no limit) fails the connection: the stream's
    ``failure`` is then websockets' ``PayloadTooBig`` when ``on_lost`` is called.

    :raises InvalidStatus: the server answered the upgrade with an HTTP error.
    :raises InvalidURI: ``url`` is not a WebSocket URL.
    :raises OSError, TimeoutError: refused, unreachable or too slow.
    """
    loop = asyncio.get_running_loop()
    stream = WebSocketStream(url, on_message, on_lost, logger, max_size)
    async with asyncio.timeout(timeout_s):
        transport: asyncio.BaseTransport
        if url.startswith(UNIX_SCHEME):
            path = split_unix_url(url)[0]
            transport, _ = await loop.create_unix_connection(lambda: stream, path)
        else:
            uri = parse_uri(url)
            ssl_context = ssl.create_default_context() if uri.secure else None
            transport, _ = await loop.create_connection(
                lambda: stream, uri.host, uri.port, ssl=ssl_context
            )
        try:
            await stream.wait_open()
        except BaseException:
            transport.abort()
            raise
    return stream


class PipeStream(asyncio.Protocol):
    """Chromium's ``--remote-debugging-pipe``: messages written to the
    browser's fd 3 and read from its fd 4, each a JSON text ended by a NUL
    byte. Create with :func:`open_pipe`. The browser exits when the pipe
    closes."""

    def __init__(
        self,
        url: str,
        on_message: MessageHandler,
        on_lost: LostHandler,
        max_size: int | None = None,
    ) -> None:
        self.url = redact_url(url)  # names it in messages
        self._on_message = on_message
        self._on_lost = on_lost
        self.max_size = max_size
        #: why this side failed the pipe (``PayloadTooBig``: a message over
        #: ``max_size``), read by the owner in ``on_lost``, as for WebSockets
        self.failure: Exception | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._reader: asyncio.ReadTransport | None = None
        self._buffer = bytearray()
        self._pending: list[bytes] = []
        self._flush_scheduled = False
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._reader = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while True:
            end = self._buffer.find(0)
            if end < 0:
                if self.max_size is not None and len(self._buffer) > self.max_size:
                    self._too_big(len(self._buffer))
                return
            if self.max_size is not None and end > self.max_size:
                self._too_big(end)
                return
            message = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._on_message(message)
            if self.closed:
                return

    def _too_big(self, size: int) -> None:
        """A message passed ``max_size``: fail the pipe (the browser exits)
        rather than buffer it."""
        self.failure = PayloadTooBig(size, self.max_size)
        self._buffer.clear()
        self.abort()
        self._lost(f"message over {self.max_size} bytes")

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(f"connection lost: {exc!r}" if exc else "closed by the browser")

    def _lost(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        if self._writer is not None:
            self._writer.close()
        self._on_lost(reason)

    def send_text(self, data: bytes) -> None:
        """Queue one message; those queued in one event-loop turn are written
        together at its end.

        :raises ConnectionError: the pipe is closed."""
        if self.closed or self._writer is None or self._writer.is_closing():
            raise ConnectionError(f"{self.url}: pipe closed")
        self._pending.append(data)
        self._pending.append(b"\0")
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        data, self._pending = b"".join(self._pending), []
        if data and self._writer is not None and not self._writer.is_closing():
            self._writer.write(data)

    def close(self) -> None:
        """Close both ends (the browser then exits)."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
        if self._reader is not None:
            self._reader.close()

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()
        if self._reader is not None:
            self._reader.close()


async def open_pipe(
    url: str,
    write_fd: int,
    read_fd: int,
    on_message: MessageHandler,
    on_lost: LostHandler,
    max_size: int | None = None,
) -> PipeStream:
    """A :class:`PipeStream` over the parent's ends of the browser's pipe
    (``write_fd`` feeds its fd 3, ``read_fd`` reads its fd 4); both fds are
    owned by the stream from then on. ``url`` names it in messages."""
    loop = asyncio.get_running_loop()
    stream = PipeStream(url, on_message, on_lost, max_size)
    os.set_blocking(write_fd, False)
    os.set_blocking(read_fd, False)
    await loop.connect_read_pipe(lambda: stream, os.fdopen(read_fd, "rb", buffering=0))
    writer, _ = await loop.connect_write_pipe(
        asyncio.BaseProtocol, os.fdopen(write_fd, "wb", buffering=0)
    )
    stream._writer = writer
    return stream


__all__ = [
    "InvalidStatus",
    "InvalidURI",
    "PayloadTooBig",
    "PipeStream",
    "Stream",
    "WebSocketStream",
    "open_pipe",
    "open_stream",
    "split_unix_url",
    "unix_socket_url",
]
