"""The test site's aiohttp application and the code that serves it.

Routes live in small modules grouped by purpose:

- ``protocol``: /echo, /echo-html, /redirect/*, /status/<code>, /set-cookies
- ``assets``: /json, /pdf, /image.png, /text, /204
- ``browser``: /js, /hanging-image, /never, /self-navigate, /click-to-404,
  /latin1, /slow, /busy-loop
- ``shop``: /products, /product/<id>
- ``stats``: /inflight, /stats, /stats/reset (and hit counting for all)
- ``faults``: /flaky, /rate-limited, /fault-records
- ``sessions``: /login, /account, /refresh, /whoami, /local-storage, /session-inflight
- ``jobsite``: /jobsite/<n>, /jobsite/fetches (pause-and-resume crawls)
- ``fidelity``: /fid/* (rendered vs plain Scrapy: encodings, redirects, cookies, auth)
- ``throws``: /throws (a page script error with a very long message)
- ``cache``: /cache/<key>/* (scripts with each kind of cache header)
"""

from __future__ import annotations

import asyncio
import signal

from aiohttp import web

from . import (
    assets,
    browser,
    cache,
    faults,
    fidelity,
    jobsite,
    protocol,
    sessions,
    shop,
    stats,
    throws,
)
from .common import PARKED, cancel_parked

HOST = "127.0.0.1"


def make_app() -> web.Application:
    """Build the application with every route and a fresh set of records."""
    app = web.Application(middlewares=[stats.count_hits])
    app[stats.STATS] = stats.Stats()
    app[browser.NEVER] = asyncio.Event()
    app[PARKED] = set()
    app.on_shutdown.append(cancel_parked)
    for module in (protocol, assets, browser, shop, stats, sessions):
        app.router.add_routes(module.routes)
    app.router.add_routes(faults.routes)
    app.router.add_routes(jobsite.routes)
    app.router.add_routes(fidelity.routes)
    app.router.add_routes(throws.routes)
    app.router.add_routes(cache.routes)
    return app


async def serve(port: int = 0) -> None:
    """Serve on 127.0.0.1:``port`` until SIGTERM or SIGINT.

    Prints ``LISTENING http://127.0.0.1:<port>`` (the bound port) once the
    socket accepts connections; nothing else goes to stdout.
    """
    runner = web.AppRunner(
        make_app(),
        access_log=None,
        handle_signals=False,
        # Stop a handler when its client goes away (e.g. a browser giving
        # up on /never or /slow) instead of letting it run on.
        handler_cancellation=True,
        shutdown_timeout=1.0,
    )
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        site = web.TCPSite(runner, HOST, port)
        await site.start()
        bound_port = runner.addresses[0][1]
        print(f"LISTENING http://{HOST}:{bound_port}", flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()
