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
from websockets.exceptions import InvalidState, InvalidStatus, InvalidURI
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

MessageHandler = Callable[[bytes], None]
LostHandler = Callable[[str], None]


class WebSocketStream(asyncio.Protocol):
    """One client WebSocket. Create with :func:`open_stream`."""

    def __init__(
        self, url: str, on_message: MessageHandler, on_lost: LostHandler, logger: logging.Logger
    ) -> None:
        self.url = url
        self._ws = ClientProtocol(parse_uri(url), max_size=None, logger=logger)
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
        self._write_pending()  # pongs, close replies

    def eof_received(self) -> bool | None:
        self._ws.receive_eof()
        self._write_pending()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
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
) -> WebSocketStream:
    """Connect to ``url`` (``ws://`` or ``wss://``) and complete the opening
    handshake within ``timeout_s`` seconds.

    :raises InvalidStatus: the server answered the upgrade with an HTTP error.
    :raises InvalidURI: ``url`` is not a WebSocket URL.
    :raises OSError, TimeoutError: refused, unreachable or too slow.
    """
    uri = parse_uri(url)
    loop = asyncio.get_running_loop()
    stream = WebSocketStream(url, on_message, on_lost, logger)
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


__all__ = ["InvalidStatus", "InvalidURI", "WebSocketStream", "open_stream"]
