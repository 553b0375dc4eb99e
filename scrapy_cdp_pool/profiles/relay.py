"""A one-use WebSocket relay from 127.0.0.1 to a server's Unix socket, for
Playwright (``connect_over_cdp`` needs a ws:// URL) in a sign-in hook.

It listens on 127.0.0.1 on a free port and accepts one WebSocket upgrade,
at a path made of 32 random bytes (:func:`secrets.token_urlsafe`), the URL
handed to Playwright only (never in a command line or a log). Any other
request gets a 404 and is closed. After that one upgrade it stops listening,
and splices bytes between the client and a new connection on the socket
until either side closes, or the relay is closed (at the hook's end).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from scrapy_cdp_pool.browser.cdp.transport import split_unix_url

logger = logging.getLogger(__name__)

#: the most an upgrade request's head may hold
_MAX_HEAD = 16 * 1024
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
#: seconds a client has to send its request head
_HEAD_TIMEOUT_S = 10.0


class _Relay:
    def __init__(self, socket_path: str, resource: str) -> None:
        self.socket_path = socket_path
        self.resource = resource
        self.token = secrets.token_urlsafe(32)
        self.server: asyncio.Server | None = None
        self.used = False
        self.refused = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except asyncio.CancelledError:
            pass  # the relay is closing (the hook ended): nothing to report
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_HEAD_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError, OSError):
            self.refused += 1
            return
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        upgrade = any(
            line.lower().startswith(b"upgrade:") and b"websocket" in line.lower()
            for line in lines[1:]
        )
        good = (
            len(parts) == 3
            and parts[0] == b"GET"
            and hmac.compare_digest(parts[1], ("/" + self.token).encode())
            and upgrade
            and not self.used
        )
        if not good:
            self.refused += 1
            writer.write(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            with contextlib.suppress(OSError):
                await writer.drain()
            return
        self.used = True
        if self.server is not None:
            self.server.close()  # one upgrade only
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.socket_path)
        except OSError as e:
            logger.warning("Sign-in relay: cannot reach %s: %r", self.socket_path, e)
            return
        lines[0] = b"GET " + self.resource.encode() + b" HTTP/1.1"
        up_writer.write(b"\r\n".join(lines))
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


@asynccontextmanager
async def unix_socket_relay(endpoint: str) -> AsyncIterator[str]:
    """A ``ws://127.0.0.1:<port>/<token>`` URL that reaches ``endpoint``
    (``ws+unix:///path:/resource``) once, for the block's duration.

    :raises OSError: cannot listen on 127.0.0.1.
    """
    socket_path, resource = split_unix_url(endpoint)
    relay = _Relay(socket_path, resource)
    relay.server = await asyncio.start_server(relay.handle, "127.0.0.1", 0, limit=_MAX_HEAD)
    port = relay.server.sockets[0].getsockname()[1]
    try:
        yield f"ws://127.0.0.1:{port}/{relay.token}"
    finally:
        await relay.close()
        if relay.refused:
            logger.warning(
                "Sign-in relay on 127.0.0.1:%d refused %d connection(s) without its token",
                port,
                relay.refused,
            )
