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
- ``/polite-redirect?key=K&i=N``: a 302 to ``/flaky?key=K&fail=0&i=Nr`` (both
  hops recorded under key ``K``), for the politeness tests.
- ``/held?key=K&ms=M&i=N``: answers 200 after ``M`` ms; counts the requests of
  key ``K`` being answered at once (``in_flight_max`` in the records).
- ``/truncated?length=L&sent=S``: a 200 HTML page announcing ``Content-Length: L``
  whose connection is closed after ``S`` bytes of body (data loss).
- ``/dropped``: the connection is closed as soon as the request arrives, with no
  answer at all; ``/reset``: the same with a TCP reset.
- ``/fault-records?key=K``: JSON ``{"arrivals": [...], "window_end": t,
  "windows": [[start, end], ...], "labels": [...], "in_flight_max": n}``: the site's
  ``time.monotonic()`` at each arrival of key ``K``, the end of its
  ``/rate-limited`` 429 window (``null`` if none), the windows ``/storm``
  announced, and the ``i`` query value of each arrival (``""`` if none). A test
  compares server-side times, or times the crawler took with
  ``time.monotonic()`` too (one clock for all processes on Linux).

Keys are per test (a random token), so records never mix.
"""

from __future__ import annotations

import asyncio
import math
import socket
import struct
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from html import escape
from urllib.parse import quote

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()


@dataclass
class KeyRecord:
    arrivals: list[float] = field(default_factory=list)
    window_end: float | None = None
    windows: list[tuple[float, float]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    in_flight: int = 0
    in_flight_max: int = 0


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


@routes.get("/polite-redirect")
async def polite_redirect(request: web.Request) -> web.Response:
    """A redirect whose hop is recorded: its target is recorded under the same key."""
    key, _ = _arrive(request)
    label = request.query.get("i", "")
    target = f"/flaky?key={quote(key)}&fail=0&i={quote(label)}r"
    raise web.HTTPFound(target)


@routes.get("/held")
async def held(request: web.Request) -> web.Response:
    """A page answered after ``ms`` milliseconds, counted while it is held."""
    key, record = _arrive(request)
    record.in_flight += 1
    record.in_flight_max = max(record.in_flight_max, record.in_flight)
    try:
        await asyncio.sleep(int_query(request, "ms", 300, 0, 60_000) / 1000)
    finally:
        record.in_flight -= 1
    return html_response("Held", f'<p class="item">{escape(key)}</p>')


@routes.get("/truncated")
async def truncated(request: web.Request) -> web.StreamResponse:
    """A body cut short of its ``Content-Length``: the connection closes."""
    length = int_query(request, "length", 4096, 1, 1 << 20)
    sent = int_query(request, "sent", 100, 0, length - 1)
    # ?charset=none: labelled text/html only (Chromium then waits for 1024
    # bytes to look for a charset before it parses)
    charset = "" if request.query.get("charset") == "none" else "; charset=utf-8"
    response = web.StreamResponse(headers={"Content-Type": f"text/html{charset}"})
    response.content_length = length
    await response.prepare(request)
    # ?bare=1: text without a tag (Scrapy's mock /broken sends "partial")
    start = b"" if request.query.get("bare") == "1" else b"<html><body><p>"
    body = (start + b"x" * length)[:sent]
    await response.write(body)
    transport = request.transport
    if transport is not None:
        transport.close()
    return response


@routes.get("/dropped")
async def dropped(request: web.Request) -> web.StreamResponse:
    """No answer: the connection is closed at once."""
    transport = request.transport
    if transport is not None:
        transport.close()
    return web.StreamResponse()


@routes.get("/reset")
async def reset(request: web.Request) -> web.StreamResponse:
    """No answer: the connection is reset (``SO_LINGER`` 0, then closed)."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.close()
    return web.StreamResponse()


@routes.get("/fault-records")
async def fault_records(request: web.Request) -> web.Response:
    record = RECORDS[request.query.get("key", "default")]
    return web.json_response(
        {
            "arrivals": record.arrivals,
            "window_end": record.window_end,
            "windows": record.windows,
            "labels": record.labels,
            "in_flight_max": record.in_flight_max,
        }
    )
