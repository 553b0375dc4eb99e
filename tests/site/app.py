"""The test site's aiohttp application and the code that serves it.

Routes live in small modules grouped by purpose:

- ``protocol``: /echo, /echo-html, /redirect/*, /status/<code>, /set-cookies
- ``assets``: /json, /pdf, /image.png, /text, /204
- ``browser``: /js, /hanging-image, /never, /self-navigate, /click-to-404,
  /latin1, /slow, /busy-loop
- ``shop``: /products, /product/<id>
- ``stats``: /inflight, /stats, /stats/reset (and hit counting for all)
- ``faults``: /flaky, /rate-limited, /storm, /polite-redirect, /held,
  /truncated, /dropped, /reset, /fault-records
- ``sessions``: /login, /account, /refresh, /whoami, /local-storage, /session-inflight
- ``jobsite``: /jobsite/<n>, /jobsite/fetches (pause-and-resume crawls)
- ``fidelity``: /fid/* (rendered vs plain Scrapy: encodings, redirects, cookies, auth)
- ``throws``: /throws (a page script error with a very long message)
- ``fidelity2``: /body-digest, /self-post, /ua (rendered vs plain fidelity)
- ``behaviour``: /behaviour/* (dialogs, storage between visits, timers, service
  workers, late content, other schemes, memory hog, infinite scroll)
- ``pagecontrol``: /pc/* (network capture, init scripts, URL blocking, console)
- ``cache``: /cache/<key>/* (scripts with each kind of cache header)
- ``ladder``: /ladder/* (static, script-rendered and Chromium-only pages: issue 17)
- ``livepage``: /live/* (pages driven through a live page)
- ``actions``: /act/* (page actions: what each one made the page see)
- ``oversize``: /oversize/* (bodies streamed past DOWNLOAD_MAXSIZE)
- ``history``: /hist/* (URL changes without a new document: pushState, fragments)
- ``shadow``: /shadow/* (content in open shadow roots)
- ``bigpages``: /big/* (large rendered pages)
- ``encodings``: /enc/* (one text in many encodings)
- ``auth``: /auth/* (a page's own calls to an API behind basic auth)
- ``private``: /private/* (a page reaching into the crawler's own machine)
- ``downloads``: /dl/* (pages that start a download)
- ``cookie_flood``: /flood/* (a page writing hundreds of cookies)
- ``hostile_pages``: /hostile/* (1,000 iframes, a window.open storm, 10,000 pushState)
- ``todomvc``: /todomvc/<app>/ (built TodoMVC apps, vendored)
"""

from __future__ import annotations

import asyncio
import signal
import ssl
from collections import defaultdict

from aiohttp import web

from . import (
    actions,
    assets,
    auth,
    behaviour,
    bigpages,
    browser,
    cache,
    cookie_flood,
    downloads,
    encodings,
    faults,
    fidelity,
    fidelity2,
    history,
    hostile_pages,
    jobsite,
    ladder,
    livepage,
    oversize,
    pagecontrol,
    private,
    protocol,
    sessions,
    shadow,
    shop,
    stats,
    throws,
    todomvc,
)
from .common import PARKED, cancel_parked

HOST = "127.0.0.1"


def make_app() -> web.Application:
    """Build the application with every route and a fresh set of records."""
    # Request bodies up to 16 MiB (large-body tests post 5 MiB; aiohttp: 1 MiB).
    app = web.Application(middlewares=[stats.count_hits], client_max_size=16 * 1024 * 1024)
    app[stats.STATS] = stats.Stats()
    app[browser.NEVER] = asyncio.Event()
    app[PARKED] = set()
    app[behaviour.TICKS] = defaultdict(list)
    app[livepage.RECORDS] = []
    app[actions.REPORTS] = defaultdict(list)
    app[oversize.RECORDS] = {}
    app.on_shutdown.append(cancel_parked)
    for module in (protocol, assets, browser, shop, stats, sessions):
        app.router.add_routes(module.routes)
    app.router.add_routes(faults.routes)
    app.router.add_routes(jobsite.routes)
    app.router.add_routes(fidelity.routes)
    app.router.add_routes(throws.routes)
    app.router.add_routes(fidelity2.routes)
    app.router.add_routes(behaviour.routes)
    app.router.add_routes(pagecontrol.routes)
    app.router.add_routes(cache.routes)
    app[ladder.SWITCHED] = {}
    app.router.add_routes(ladder.routes)
    app.router.add_routes(livepage.routes)
    app.router.add_routes(actions.routes)
    app.router.add_routes(oversize.routes)
    app.router.add_routes(history.routes)
    app.router.add_routes(shadow.routes)
    app.router.add_routes(bigpages.routes)
    app.router.add_routes(encodings.routes)
    app[auth.SEEN] = []
    app.router.add_routes(auth.routes)
    app.router.add_routes(private.routes)
    app.router.add_routes(downloads.routes)
    app.router.add_routes(cookie_flood.routes)
    app.router.add_routes(hostile_pages.routes)
    app.router.add_routes(todomvc.routes)
    return app


async def serve(port: int = 0, ssl_context: ssl.SSLContext | None = None, host: str = HOST) -> None:
    """Serve on ``host`` (a loopback address, 127.0.0.1 by default):``port``
    until SIGTERM or SIGINT; over HTTPS with ``ssl_context``.

    Prints ``LISTENING http://<host>:<port>`` (``https://`` with TLS; the
    bound port) once the socket accepts connections; nothing else goes to
    stdout.
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
        site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
        await site.start()
        bound_port = runner.addresses[0][1]
        scheme = "https" if ssl_context is not None else "http"
        print(f"LISTENING {scheme}://{host}:{bound_port}", flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()
