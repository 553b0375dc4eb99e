"""``python -m tests.site [--port N]``: serve the test site on 127.0.0.1.

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
    args = parser.parse_args()
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
