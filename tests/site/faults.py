"""Fault-injecting routes, and what they saw, for the resilience tests.

- ``/flaky?key=K&fail=N&status=503[&retry_after=S]`` answers ``status`` (with
  ``Retry-After: S`` if given) to the first ``N`` requests of key ``K``, then
  200 with ``<p class="item">K</p>``.
- ``/rate-limited?key=K&after=S[&date=1]`` answers the first request of key
  ``K`` with 429 and ``Retry-After: S`` (as an HTTP-date with ``date=1``), later
  ones with 200. The window the server asked for ends at ``window_end``.
- ``/storm?key=K&every=E&after=S1,S2,...`` answers every ``E``-th request of
  key ``K`` (the ``E``-th, ``2E``-th, ...) with 429 and ``Retry-After``, the
  ``S`` values taken in turn; the others with 200. Each 429 announces a window,
  from its arrival to ``S`` seconds later.
- ``/fault-records?key=K``: JSON ``{"arrivals": [...], "window_end": t,
  "windows": [[start, end], ...], "labels": [...]}``: the site's
  ``time.monotonic()`` at each arrival of key ``K``, the end of its
  ``/rate-limited`` 429 window (``null`` if none), the windows ``/storm``
  announced, and the ``i`` query value of each arrival (``""`` if none). A test
  compares server-side times, or times the crawler took with
  ``time.monotonic()`` too (one clock for all processes on Linux).

Keys are per test (a random token), so records never mix.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from html import escape

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()


@dataclass
class KeyRecord:
    arrivals: list[float] = field(default_factory=list)
    window_end: float | None = None
    windows: list[tuple[float, float]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


RECORDS: defaultdict[str, KeyRecord] = defaultdict(KeyRecord)


def _arrive(request: web.Request) -> tuple[str, KeyRecord]:
    key = request.query.get("key", "default")
    record = RECORDS[key]
    record.arrivals.append(time.monotonic())
    record.labels.append(request.query.get("i", ""))
    return key, record


@routes.get("/flaky")
async def flaky(request: web.Request) -> web.Response:
    """Fail the first ``fail`` requests of ``key`` with ``status``."""
    key, record = _arrive(request)
    fail = int_query(request, "fail", 1, 0, 100)
    status = int_query(request, "status", 503, 400, 599)
    if len(record.arrivals) <= fail:
        headers = {}
        if "retry_after" in request.query:
            headers["Retry-After"] = request.query["retry_after"]
        return html_response("Flaky", "<p>try again</p>", status=status, headers=headers)
    return html_response("Flaky", f'<p class="item">{escape(key)}</p>')


@routes.get("/rate-limited")
async def rate_limited(request: web.Request) -> web.Response:
    """429 with ``Retry-After`` to the first request of ``key``, then 200."""
    key, record = _arrive(request)
    if len(record.arrivals) > 1:
        return html_response("Rate limited", f'<p class="item">{escape(key)}</p>')
    after = int_query(request, "after", 2, 0, 600)
    if request.query.get("date") == "1":
        # An HTTP-date has whole seconds: name the first whole second at least
        # ``after`` seconds from now, and end the window there.
        now = datetime.now(UTC)
        when = datetime.fromtimestamp(math.ceil(now.timestamp() + after), UTC)
        retry_after = format_datetime(when, usegmt=True)
        wait = (when - now) / timedelta(seconds=1)
    else:
        retry_after, wait = str(after), float(after)
    record.window_end = record.arrivals[0] + wait
    return html_response(
        "Rate limited", "<p>slow down</p>", status=429, headers={"Retry-After": retry_after}
    )


@routes.get("/storm")
async def storm(request: web.Request) -> web.Response:
    """A host rate-limiting a share of its requests: every ``every``-th
    request of ``key`` gets 429 with the next ``Retry-After`` of ``after``."""
    key, record = _arrive(request)
    every = int_query(request, "every", 3, 1, 1000)
    try:
        after = [int(value) for value in request.query.get("after", "1").split(",")]
    except ValueError:
        raise web.HTTPBadRequest(text="after must be integers, comma-separated") from None
    count = len(record.arrivals)
    if count % every:
        return html_response("Storm", f'<p class="item">{escape(key)} {count}</p>')
    seconds = max(0, min(600, after[(count // every - 1) % len(after)]))
    arrival = record.arrivals[-1]
    record.windows.append((arrival, arrival + seconds))
    return html_response(
        "Storm", "<p>slow down</p>", status=429, headers={"Retry-After": str(seconds)}
    )


@routes.get("/fault-records")
async def fault_records(request: web.Request) -> web.Response:
    record = RECORDS[request.query.get("key", "default")]
    return web.json_response(
        {
            "arrivals": record.arrivals,
            "window_end": record.window_end,
            "windows": record.windows,
            "labels": record.labels,
        }
    )
