"""An HTTPS server on loopback that speaks HTTP/2 (ALPN ``h2``) and
HTTP/1.1, for what a browser does with ``421 Misdirected Request``.

Run as ``python -m tests.h2_site``; prints ``LISTENING https://127.0.0.1:PORT``.
A self-signed certificate (tests/site/tls.py): a browser needs
``CDP_POOL_IGNORE_HTTPS_ERRORS``.

- over HTTP/2: ``/misdirected...`` answers ``421`` (as a server does for a
  request it will not serve on that connection); any other path answers 200.
- over HTTP/1.1 (ALPN ``http/1.1`` or none): every path answers 200.
- A 200 page is ``<p id="proto">h2</p>`` (or ``http/1.1``) and the path.
- ``/stats`` (any protocol): ``{"h2 /path": n, "http/1.1 /path": n}``, the
  requests served, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter

import h2.config
import h2.connection
import h2.events

from tests.site.tls import self_signed_context

SERVED: Counter[str] = Counter()


def _answer(protocol: str, path: str) -> tuple[int, bytes, str]:
    """``(status, body, content type)`` of ``path`` asked over ``protocol``."""
    if path == "/stats":
        return 200, json.dumps(dict(SERVED)).encode(), "application/json"
    SERVED[f"{protocol} {path}"] += 1
    if protocol == "h2" and path.startswith("/misdirected"):
        return 421, b"<p>misdirected</p>", "text/html"
    page = f'<title>{protocol}</title><p id="proto">{protocol}</p><p id="path">{path}</p>'
    return 200, page.encode(), "text/html; charset=utf-8"


async def _http2(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    connection = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
    )
    connection.initiate_connection()
    writer.write(connection.data_to_send())
    while data := await reader.read(65536):
        for event in connection.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                headers = dict(event.headers)
                status, body, content_type = _answer("h2", str(headers.get(":path", "/")))
                connection.send_headers(
                    event.stream_id,
                    [(":status", str(status)), ("content-type", content_type),
                     ("content-length", str(len(body)))],
                )  # fmt: skip
                connection.send_data(event.stream_id, body, end_stream=True)
            elif isinstance(event, h2.events.ConnectionTerminated):
                writer.write(connection.data_to_send())
                return
        writer.write(connection.data_to_send())
        await writer.drain()


async def _http11(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        path = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
        status, body, content_type = _answer("http/1.1", path)
        reason = "OK" if status == 200 else "Misdirected Request"
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    ssl_object = writer.get_extra_info("ssl_object")
    protocol = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
    try:
        if protocol == "h2":
            await _http2(reader, writer)
        else:
            await _http11(reader, writer)
    except (ConnectionError, h2.exceptions.ProtocolError):
        pass
    finally:
        writer.close()


async def main() -> None:
    context = self_signed_context()
    context.set_alpn_protocols(["h2", "http/1.1"])
    server = await asyncio.start_server(_serve, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING https://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
