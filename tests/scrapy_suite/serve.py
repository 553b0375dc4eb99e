"""Run one of Scrapy's vendored mock servers on 127.0.0.1 (Scrapy's own listen
on every interface): ``python -m tests.scrapy_suite.serve tests.mockserver.http
[its arguments]``. Started by Scrapy's ``BaseMockServer`` through
:func:`tests.scrapy_suite.suite.route_mock_servers`; it prints the addresses
Scrapy's ``BaseMockServer`` reads, and is killed by it."""

from __future__ import annotations

import runpy
import sys
from typing import Any

from tests.scrapy_suite import install


def main() -> None:
    install()
    from twisted.internet import reactor

    # listenSSL calls listenTCP with every argument: only listenTCP is wrapped
    listen_tcp = reactor.listenTCP

    def listen_on_loopback(port: int, factory: Any, backlog: int = 50, interface: str = "") -> Any:
        return listen_tcp(port, factory, backlog, interface or "127.0.0.1")

    reactor.listenTCP = listen_on_loopback
    module = sys.argv.pop(1)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
