"""``python -m tests.site [--port N] [--tls] [--host 127.x.y.z]``: serve the test site on 127.0.0.1
(over HTTPS with a fresh self-signed certificate with ``--tls``).

With no ``--port`` (or ``--port 0``) an ephemeral port is used; the first
and only line on stdout, ``LISTENING http://127.0.0.1:<port>``, tells it.
SIGTERM or SIGINT stops the server and exits with status 0.
"""

from __future__ import annotations

import argparse
import asyncio

from .app import serve


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.site")
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: 0, ephemeral)")
    parser.add_argument(
        "--tls", action="store_true", help="serve HTTPS with a fresh self-signed certificate"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="a loopback address to listen on (default: 127.0.0.1)"
    )
    args = parser.parse_args()
    if not args.host.startswith("127."):
        parser.error("--host: only a loopback address (127.x.y.z)")
    ssl_context = None
    if args.tls:
        from .tls import self_signed_context

        ssl_context = self_signed_context()
    asyncio.run(serve(args.port, ssl_context, args.host))


if __name__ == "__main__":
    main()
