"""A client WebSocket as an asyncio protocol over websockets' sans-I/O core.

Why not ``websockets.asyncio.client``: on the render path every message counts.
Its asyncio layer writes each frame with its own ``send()`` system call and
passes each received message through an assembler queue. Here frames written in
the same event-loop turn (pipelined CDP commands) go out in one write, and a
received message is handed to the caller straight from ``data_received``.
Framing, masking, the opening and closing handshakes and ping replies are
websockets' own (``websockets.client.ClientProtocol``), the documented way to
embed it in another I/O layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable
from typing import cast

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidState, InvalidStatus, InvalidURI, PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

MessageHandler = Callable[[bytes], None]
LostHandler = Callable[[str], None]


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
        self.url = url
        # websockets checks max_size against each frame's announced length
        # before reading its payload, and against the sum of a fragmented
        # message's frames, so neither one huge frame nor endless fragments
        # are buffered past it (here or in self._fragments).
        self._ws = ClientProtocol(parse_uri(url), max_size=max_size, logger=logger)
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


async def open_stream(
    url: str,
    on_message: MessageHandler,
    on_lost: LostHandler,
    *,
    timeout_s: float,
    logger: logging.Logger,
    max_size: int | None = None,
) -> WebSocketStream:
    """Connect to ``url`` (``ws://`` or ``wss://``) and complete the opening
    handshake within ``timeout_s`` seconds. A received message over
    ``max_size`` bytes (``None``: no limit) fails the connection: the stream's
    ``failure`` is then websockets' ``PayloadTooBig`` when ``on_lost`` is called.

    :raises InvalidStatus: the server answered the upgrade with an HTTP error.
    :raises InvalidURI: ``url`` is not a WebSocket URL.
    :raises OSError, TimeoutError: refused, unreachable or too slow.
    """
    uri = parse_uri(url)
    loop = asyncio.get_running_loop()
    stream = WebSocketStream(url, on_message, on_lost, logger, max_size)
    ssl_context = ssl.create_default_context() if uri.secure else None
    async with asyncio.timeout(timeout_s):
        transport, _ = await loop.create_connection(
            lambda: stream, uri.host, uri.port, ssl=ssl_context
        )
        try:
            await stream.wait_open()
        except BaseException:
            transport.abort()
            raise
    return stream


__all__ = ["InvalidStatus", "InvalidURI", "PayloadTooBig", "WebSocketStream", "open_stream"]
