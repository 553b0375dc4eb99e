"""``python -m tests.site.hostile_cdp MODE [--size-mb N] [--kind chromium|lightpanda]``:
a broken or malicious CDP endpoint on 127.0.0.1, for the tests of bounded
inputs (issue 12 item 4).

It answers ``GET /json/version`` and the WebSocket upgrade itself (plain
asyncio, so it can send what no well-behaved server library would), speaks
just enough CDP to get a render going (browser context, target, session, every
other command answered ``{}``), and misbehaves in one way, chosen by ``MODE``:

- ``endless``: answers ``Page.navigate`` with a text message that never ends
  (1 MiB continuation frames, for ever);
- ``endless-frame``: the same with one frame that announces 2**40 bytes;
- ``huge``: answers ``Page.navigate`` with one message of ``--size-mb`` MiB;
- ``flood``: after ``Page.navigate``, floods events and never answers another
  command: paused requests, ``Set-Cookie`` extra-info, lifecycle events on the
  page's session, and auto-attached targets nobody created;
- ``flood-events``: the same without paused requests (events that need no
  answer);
- ``drip``: ``/json/version`` sends its headers, then one byte a second;
- ``version-endless``: ``/json/version`` sends a body that never ends;
- ``not-object``: answers the first command of each connection with JSON that
  is not an object (``[]``, ``1``, ``"x"``, ``null``, in turn);
- ``bad-frames``: answers the first command of each connection with a frame
  that breaks the WebSocket protocol (see :data:`BAD_FRAMES`, in turn);
- ``wrong-types``: answers the first command of each connection with an object
  of the wrong types (``id`` a string, ``error`` a string, ``result`` a list,
  ``params`` a list, ``method`` a number, ``sessionId`` a number, in turn).

The first line on stdout is ``LISTENING http://127.0.0.1:<port>``; then one
``CONNECTION <n>`` line per WebSocket accepted, and ``BAD <n>`` when
connection ``n`` was sent its malformed message. SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import signal
import struct
import sys
from typing import Any

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_CHUNK = b" " * (1 << 20)

NOT_OBJECTS = [b"[]", b"1", b'"x"', b"null"]

#: frames that break RFC 6455: a reserved opcode, a reserved bit, a text frame
#: that is not UTF-8, a continuation with no message to continue
BAD_FRAMES = [b"\x83\x00", b"\xc1\x02{}", b"\x81\x02\xff\xfe", b"\x80\x02{}"]


def wrong_types(msg_id: int) -> list[dict[str, Any]]:
    """Messages that are objects but whose fields have the wrong types."""
    return [
        {"id": str(msg_id), "result": {}},
        {"id": msg_id, "error": "boom"},
        {"id": msg_id, "result": []},
        {"method": "Target.targetCrashed", "params": []},
        {"method": 5, "params": {}},
        {"method": "Page.loadEventFired", "params": {}, "sessionId": 7},
    ]


def frame_header(opcode: int, length: int, *, fin: bool = True) -> bytes:
    first = (0x80 if fin else 0) | opcode
    if length < 126:
        return struct.pack("!BB", first, length)
    if length < 1 << 16:
        return struct.pack("!BBH", first, 126, length)
    return struct.pack("!BBQ", first, 127, length)


class HostileCDP:
    def __init__(self, mode: str, size_mb: float, kind: str) -> None:
        self.mode = mode
        self.size = int(size_mb * (1 << 20))
        self.kind = kind
        self.connections = itertools.count()
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split()[1]
            headers = {
                k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:] if x)
            }
            if "sec-websocket-key" in headers:
                await self.websocket(reader, writer, headers["sec-websocket-key"])
            elif path == "/json/version":
                await self.version(writer)
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        except asyncio.CancelledError:  # the server is stopping
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def version(self, writer: asyncio.StreamWriter) -> None:
        browser = "Lightpanda/1.0" if self.kind == "lightpanda" else "HeadlessChrome/140.0"
        body = json.dumps({
            "Browser": browser,
            "User-Agent": "Hostile",
            "webSocketDebuggerUrl": f"ws://127.0.0.1:{self.port}/devtools/browser/hostile",
        }).encode()  # fmt: skip
        if self.mode == "drip":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            writer.write(b"Content-Length: %d\r\n\r\n" % (len(body) * 1000))
            for byte in itertools.cycle(body):
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1)
        if self.mode == "version-endless":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[")
            while True:
                writer.write(_CHUNK)
                await writer.drain()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    async def websocket(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, key: str
    ) -> None:
        accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest())  # noqa: S324
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        number = next(self.connections)
        print(f"CONNECTION {number}", flush=True)
        first = True
        flood: asyncio.Task[None] | None = None
        try:
            while True:
                message = await read_message(reader)
                if message is None:
                    return
                if flood is not None:
                    continue  # read, never answered
                command = json.loads(message)
                msg_id, method = command["id"], command["method"]
                if first and self.mode in ("not-object", "wrong-types", "bad-frames"):
                    first = False
                    if self.mode == "bad-frames":
                        print(f"BAD {number}", flush=True)
                        writer.write(BAD_FRAMES[number % len(BAD_FRAMES)])
                        await writer.drain()
                        continue
                    if self.mode == "not-object":
                        bad = NOT_OBJECTS[number % len(NOT_OBJECTS)]
                    else:
                        cases = wrong_types(msg_id)
                        bad = json.dumps(cases[number % len(cases)]).encode()
                    print(f"BAD {number}", flush=True)
                    await send(writer, bad)
                    continue
                if method == "Page.navigate" and self.mode in ("endless", "endless-frame"):
                    await self.endless(writer)
                    return
                if method == "Page.navigate" and self.mode == "huge":
                    await self.huge(writer, msg_id)
                    continue
                if method == "Page.navigate" and self.mode.startswith("flood"):
                    flood = asyncio.ensure_future(self.flood(writer, command.get("sessionId")))
                    continue
                await send(writer, json.dumps({"id": msg_id, "result": answer(command)}).encode())
        finally:
            if flood is not None:
                flood.cancel()

    async def huge(self, writer: asyncio.StreamWriter, msg_id: int) -> None:
        """One valid answer of ``size`` bytes of string, streamed as it is
        written (the server holds 1 MiB of it at a time)."""
        prefix, suffix = b'{"id": %d, "result": {"frameId": "' % msg_id, b'"}}'
        writer.write(frame_header(0x1, len(prefix) + self.size + len(suffix)) + prefix)
        left = self.size
        while left:
            chunk = _CHUNK[: min(left, len(_CHUNK))]
            writer.write(chunk.replace(b" ", b"x"))
            left -= len(chunk)
            await writer.drain()
        writer.write(suffix)

    async def endless(self, writer: asyncio.StreamWriter) -> None:
        if self.mode == "endless-frame":
            writer.write(frame_header(0x1, 1 << 40) + b'{"id": 1, "result": {"x": "')
        else:
            writer.write(frame_header(0x1, len(_CHUNK), fin=False) + _CHUNK)
        while True:
            if self.mode == "endless-frame":
                writer.write(_CHUNK)
            else:
                writer.write(frame_header(0x0, len(_CHUNK), fin=False) + _CHUNK)
            await writer.drain()

    async def flood(self, writer: asyncio.StreamWriter, session_id: str | None) -> None:
        padding = "p" * 512
        for n in itertools.count():
            events = [
                {"method": "Fetch.requestPaused", "sessionId": session_id, "params": {
                    "requestId": f"interception-{n}", "resourceType": "Image",
                    "frameId": "T1", "request": {"url": f"http://x.test/{n}.png?{padding}"},
                }},
                {"method": "Network.responseReceivedExtraInfo", "sessionId": session_id,
                 "params": {"requestId": f"r{n}", "headers": {"set-cookie": f"c{n}={padding}"}}},
                {"method": "Page.lifecycleEvent", "sessionId": session_id,
                 "params": {"name": "networkIdle", "frameId": "T1", "pad": padding}},
                {"method": "Target.attachedToTarget", "params": {
                    "sessionId": f"S-{n}", "targetInfo": {"targetId": f"T-{n}", "url": padding},
                }},
            ]  # fmt: skip
            if self.mode == "flood-events":
                del events[0]
            for event in events:
                await send(writer, json.dumps(event).encode())


def answer(command: dict[str, Any]) -> dict[str, Any]:
    method = command["method"]
    if method == "Target.createBrowserContext":
        return {"browserContextId": "C1"}
    if method == "Target.createTarget":
        return {"targetId": "T1"}
    if method == "Target.attachToTarget":
        return {"sessionId": "S1"}
    if method == "Page.navigate":
        return {"frameId": "T1", "loaderId": "L1"}
    return {}


async def send(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.write(frame_header(0x1, len(payload)) + payload)
    await writer.drain()


async def read_message(reader: asyncio.StreamReader) -> bytes | None:
    """One client message (masked frames, fragments joined); None at a close
    frame or the end of the stream."""
    parts: list[bytes] = []
    while True:
        try:
            b1, b2 = await reader.readexactly(2)
        except asyncio.IncompleteReadError:
            return None
        length = b2 & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await reader.readexactly(8))
        mask = await reader.readexactly(4) if b2 & 0x80 else b"\0\0\0\0"
        data = await reader.readexactly(length)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        opcode = b1 & 0x0F
        if opcode == 0x8:
            return None
        if opcode in (0x9, 0xA):
            continue  # ping, pong
        parts.append(data)
        if b1 & 0x80:
            return b"".join(parts)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--kind", default="chromium", choices=["chromium", "lightpanda"])
    args = parser.parse_args()
    hostile = HostileCDP(args.mode, args.size_mb, args.kind)
    server = await asyncio.start_server(hostile.handle, "127.0.0.1", 0)
    hostile.port = server.sockets[0].getsockname()[1]
    print(f"LISTENING http://127.0.0.1:{hostile.port}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    sys.exit(0)
