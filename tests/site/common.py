"""Small helpers shared by the test site's route modules."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import TypeVar

from aiohttp import web

T = TypeVar("T")

# Handlers waiting on purpose (/never, /slow, /inflight), cancelled when
# the site shuts down so that SIGTERM exits at once.
PARKED = web.AppKey("parked", set)


def html_page(title: str, body: str, *, charset: str = "utf-8") -> str:
    """Return a minimal HTML document with ``body`` inside ``<body>``.

    ``charset`` only sets the ``<meta charset>``; encoding is the caller's.
    """
    return (
        "<!doctype html>\n"
        f'<html><head><meta charset="{charset}">'
        f"<title>{title}</title></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


def html_response(
    title: str,
    body: str,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> web.Response:
    """Answer with a small UTF-8 HTML page."""
    return web.Response(
        text=html_page(title, body),
        status=status,
        headers=headers,
        content_type="text/html",
        charset="utf-8",
    )


def script_json(value: object) -> str:
    """Serialise ``value`` as JSON that is safe inside an inline ``<script>``."""
    return json.dumps(value).replace("</", "<\\/")


def int_query(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    """Read an integer query parameter, answering 400 when it is not one.

    Values outside ``[low, high]`` are clamped so a typo cannot make a
    route allocate or sleep without bound.
    """
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be an integer") from None
    return max(low, min(high, value))


async def park(request: web.Request, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` in a way that site shutdown can cut short."""
    parked = request.app[PARKED]
    task = asyncio.current_task()
    parked.add(task)
    try:
        return await awaitable
    finally:
        parked.discard(task)


async def cancel_parked(app: web.Application) -> None:
    """on_shutdown hook: cancel every handler waiting in ``park``."""
    for task in list(app[PARKED]):
        task.cancel()
