"""What the site records about the requests it serves, and the routes to read it.

Every request is counted by path (``hits``) and by path plus query string
(``hits_by_url``), except requests to ``/stats`` and ``/stats/reset``
themselves, so that reading the records does not change them.

``/inflight`` additionally records how many of its requests were being
served at the same time, per ``key`` and over all keys.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from html import escape

from aiohttp import web

from .common import html_response, int_query, park

routes = web.RouteTableDef()

UNCOUNTED_PATHS = frozenset({"/stats", "/stats/reset"})


class Stats:
    """Hit counters and in-flight maxima for the whole site."""

    def __init__(self) -> None:
        # Live in-flight counts survive a reset so that requests still being
        # served when /stats/reset arrives leave them consistent.
        self.inflight_now: Counter[str] = Counter()
        self.inflight_now_total = 0
        self.reset()

    def reset(self) -> None:
        """Forget hits and maxima (but not the requests in flight right now)."""
        self.hits: Counter[str] = Counter()
        self.hits_by_url: Counter[str] = Counter()
        self.inflight_max: dict[str, int] = {}
        self.inflight_max_total = 0

    def record_hit(self, path: str, path_qs: str) -> None:
        self.hits[path] += 1
        self.hits_by_url[path_qs] += 1

    def enter(self, key: str) -> None:
        """Note the start of an /inflight request for ``key``."""
        self.inflight_now[key] += 1
        self.inflight_now_total += 1
        self.inflight_max[key] = max(self.inflight_max.get(key, 0), self.inflight_now[key])
        self.inflight_max_total = max(self.inflight_max_total, self.inflight_now_total)

    def leave(self, key: str) -> None:
        """Note the end of an /inflight request for ``key``."""
        self.inflight_now[key] -= 1
        self.inflight_now_total -= 1

    def as_dict(self) -> dict[str, object]:
        return {
            "inflight_max": dict(self.inflight_max),
            "inflight_max_total": self.inflight_max_total,
            "hits": dict(self.hits),
            "hits_by_url": dict(self.hits_by_url),
        }


STATS = web.AppKey("stats", Stats)


@web.middleware
async def count_hits(request: web.Request, handler):
    """Count every request (including 404s) before it is handled."""
    if request.path not in UNCOUNTED_PATHS:
        request.app[STATS].record_hit(request.path, request.path_qs)
    return await handler(request)


@routes.get("/stats")
async def stats(request: web.Request) -> web.Response:
    """The site's records as JSON."""
    return web.json_response(request.app[STATS].as_dict())


@routes.route("*", "/stats/reset")
async def stats_reset(request: web.Request) -> web.Response:
    """Clear hits and in-flight maxima (GET or POST)."""
    request.app[STATS].reset()
    return web.json_response({"reset": True})


@routes.get("/inflight")
async def inflight(request: web.Request) -> web.Response:
    """Hold the request ``ms`` milliseconds (default 200) while counting it.

    Lets a test measure how many requests a crawler keeps open at once,
    per ``key`` (default ``"default"``) and in total.
    """
    key = request.query.get("key", "default")
    ms = int_query(request, "ms", 200, 0, 60_000)
    records = request.app[STATS]
    records.enter(key)
    try:
        await park(request, asyncio.sleep(ms / 1000))
    finally:
        records.leave(key)
    return html_response("In flight", f'<p id="key">{escape(key)}</p>')
