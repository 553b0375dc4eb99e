"""``python -m tests.site.proxy NAME [--auth USER:PASS]``: a forward HTTP proxy
on 127.0.0.1 for the proxy tests.

It forwards absolute-form requests (``GET http://host:port/path``) to
``127.0.0.1:port`` whatever the host, so a URL such as
``http://proxied.test:<site port>/echo-html`` only loads through a proxy: the
name does not resolve anywhere else. Each forwarded request gets an
``X-Via-Proxy: NAME`` header, which the site's echo pages show. With
``--auth`` a request without those Basic credentials gets ``407 Proxy
Authentication Required``. One request per client connection (``Connection:
close``); ``CONNECT host:port`` (HTTPS) opens a byte tunnel to
``127.0.0.1:port``, after the same credentials check.

The first line on stdout is ``LISTENING http://127.0.0.1:<port>``; every
later line is ``FORWARDED <url>``, ``TUNNELLED <host:port>`` or ``DENIED
<url or host:port>``. SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import signal
import sys
from urllib.parse import urlsplit

HOP_BY_HOP = {"proxy-authorization", "proxy-connection", "connection", "keep-alive"}


class Proxy:
    def __init__(self, name: str, auth: str | None) -> None:
        self.name = name
        self.expected = "Basic " + base64.b64encode(auth.encode()).decode() if auth else None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *lines = head.split("\r\n")
        method, target, _version = request_line.split(" ", 2)
        headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines if line]
        found = {name.lower(): value for name, value in headers}
        if self.expected and found.get("proxy-authorization") != self.expected:
            print("DENIED", target, flush=True)
            writer.write(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                b'Proxy-Authenticate: Basic realm="tests"\r\n'
                b"Content-Length: 0\r\nConnection: close\r\n\r\n"
            )
            return
        if method == "CONNECT":
            await self._tunnel(target, reader, writer)
            return
        body = await reader.readexactly(int(found.get("content-length", "0")))
        url = urlsplit(target)
        upstream_reader, upstream_writer = await asyncio.open_connection(
            "127.0.0.1", url.port or 80
        )
        path = url.path or "/"
        out = [f"{method} {path}{'?' + url.query if url.query else ''} HTTP/1.1"]
        out += [f"{n}: {v}" for n, v in headers if n.lower() not in HOP_BY_HOP]
        out += [f"X-Via-Proxy: {self.name}", "Connection: close", "", ""]
        upstream_writer.write("\r\n".join(out).encode("latin-1") + body)
        print("FORWARDED", target, flush=True)
        while chunk := await upstream_reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        upstream_writer.close()

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """``CONNECT host:port``: a byte tunnel to ``127.0.0.1:port``."""
        port = int(target.rsplit(":", 1)[1])
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        print("TUNNELLED", target, flush=True)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while chunk := await source.read(65536):
                    sink.write(chunk)
                    await sink.drain()
            with contextlib.suppress(OSError):
                sink.write_eof()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        upstream_writer.close()


async def serve(name: str, auth: str | None) -> None:
    proxy = Proxy(name, auth)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING http://127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.site.proxy")
    parser.add_argument("name", help="sent upstream as X-Via-Proxy")
    parser.add_argument("--auth", help="USER:PASS required as Basic Proxy-Authorization")
    args = parser.parse_args()
    asyncio.run(serve(args.name, args.auth))
    sys.exit(0)


if __name__ == "__main__":
    main()
