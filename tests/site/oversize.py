"""``/oversize/*``: bodies larger than a crawl's ``DOWNLOAD_MAXSIZE``, streamed,
for the tests that a larger main document is cancelled while it arrives.

- ``/oversize/stream?key=K&bytes=N&chunk=C&type=html|text&length=L``: ``N``
  bytes (at most 1 GiB) in chunks of ``C`` bytes (default 64 KiB), as fast
  as the client reads them, without ``Content-Length`` (chunked), or with a
  ``Content-Length: L`` that lies low when ``length`` is given (with
  ``Connection: close``), or with its true ``Content-Length`` when
  ``announce=1``. ``type=html`` (default) is an HTML page of ``x`` filler,
  ``text`` is ``text/plain``, ``attachment`` is ``application/octet-stream``
  with ``Content-Disposition: attachment; filename="big.bin"`` (a download).
  ``private=1``: ``Cache-Control: private, no-store`` (a response no other
  profile may be served from a cache).
- ``/oversize/sent?key=K``: JSON ``{"sent": bytes, "finished": bool}`` for
  the stream of key ``K`` once its handler has ended (the client went away or
  all was sent; waits up to 30 s for it): ``sent`` is the body bytes handed
  to the connection before it closed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

from .common import int_query

routes = web.RouteTableDef()


@dataclass
class StreamRecord:
    """What one stream's handler wrote (bytes), and when it ended."""

    sent: int = 0
    finished: bool = False
    ended: asyncio.Event = field(default_factory=asyncio.Event)


#: stream records by key
RECORDS = web.AppKey("oversize_records", dict)

_HEAD = b"<!doctype html>\n<html><head><title>Oversize</title></head><body><p id=big>"


def _record(request: web.Request, key: str) -> StreamRecord:
    records: dict[str, StreamRecord] = request.app[RECORDS]
    return records.setdefault(key, StreamRecord())


@routes.get("/oversize/stream")
async def stream(request: web.Request) -> web.StreamResponse:
    key = request.query.get("key", "")
    total = int_query(request, "bytes", 64 * 1024 * 1024, 0, 1024 * 1024 * 1024)
    chunk_size = int_query(request, "chunk", 64 * 1024, 1024, 4 * 1024 * 1024)
    kind = request.query.get("type", "html")
    html = kind == "html"
    record = _record(request, key)
    content_type = {"html": "text/html", "attachment": "application/octet-stream"}
    response = web.StreamResponse(
        headers={"Content-Type": content_type.get(kind, "text/plain"), "Cache-Control": "no-store"}
    )
    if kind == "attachment":
        response.headers["Content-Disposition"] = 'attachment; filename="big.bin"'
    if request.query.get("private") == "1":
        response.headers["Cache-Control"] = "private, no-store"
    lie = request.query.get("length")
    if request.query.get("announce") == "1":
        response.content_length = total
    elif lie is not None:
        response.headers["Content-Length"] = str(int(lie))
        # The bytes past it must not be read as the next response of a kept
        # connection (Lightpanda 1.0.2 reuses it: WeirdServerReply).
        response.headers["Connection"] = "close"
    else:
        response.enable_chunked_encoding()
    try:
        writer = await response.prepare(request)
        if writer is not None:
            writer.length = None  # aiohttp would clip the body at a lying length
        filler = b"x" * chunk_size
        while record.sent < total:
            if html and record.sent == 0:
                piece = (_HEAD + filler)[:chunk_size]
            else:
                piece = filler[: total - record.sent]
            await response.write(piece)
            record.sent += len(piece)
        record.finished = True
        await response.write_eof()
    finally:
        record.ended.set()
    return response


@routes.get("/oversize/sent")
async def sent(request: web.Request) -> web.Response:
    record = _record(request, request.query.get("key", ""))
    try:
        await asyncio.wait_for(record.ended.wait(), 30)
    except TimeoutError:
        return web.json_response({"sent": record.sent, "finished": False, "ended": False})
    return web.json_response({"sent": record.sent, "finished": record.finished, "ended": True})
