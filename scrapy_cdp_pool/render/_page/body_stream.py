"""A paused response's body read as a stream (``Fetch.takeResponseBodyAsStream``,
``IO.read`` in chunks), stopped as soon as it passes a bound: the page's own
downloads and the ``DOWNLOAD_MAXSIZE`` of a body no ``Content-Length`` bounds."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.errors import CDPError, ResponseTooLarge

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page_handle import PageHandle

#: bytes asked for per ``IO.read`` of a streamed body
STREAM_READ_BYTES = 1 << 20


async def read_body_prefix(page: PageHandle, request_id: str, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of a paused response's body, read in chunks of
    :data:`STREAM_READ_BYTES`, and whether that is all of it; reading stops
    as soon as it passes ``limit`` (the stream is closed; the caller then
    fails the request, which ends the transfer)."""
    if limit <= 0:
        return b"", False
    body, _, complete = await _read_stream(page, request_id, limit)
    return body, complete


async def read_body_stream(page: PageHandle, request_id: str, url: str, maxsize: int) -> bytes:
    """A paused response's body read in chunks of :data:`STREAM_READ_BYTES`
    (``Fetch.takeResponseBodyAsStream``, ``IO.read``), stopped as soon as it
    passes ``maxsize`` bytes; the stream is closed either way (the caller
    then fails the request, which ends the transfer).

    :raises ResponseTooLarge: past ``maxsize`` (not all of it read).
    """
    body, read, complete = await _read_stream(page, request_id, maxsize)
    if not complete:
        raise ResponseTooLarge(url, read, maxsize, expected=False)
    return body


async def read_body_keeping_loss(
    page: PageHandle, request_id: str, url: str, maxsize: int, expected: int | None
) -> tuple[bytes, bool]:
    """A paused response's body as :func:`read_body_stream` reads it, and
    whether it was cut short: the transfer failed while it was read (what
    arrived until then is kept, as Scrapy's HTTP handler keeps it under
    ``DOWNLOAD_FAIL_ON_DATALOSS = False``), or it ended short of its
    ``Content-Length`` ``expected``. ``maxsize`` 0: no bound.

    :raises ResponseTooLarge: past ``maxsize``.
    """
    chunks: list[bytes] = []
    try:
        _, read, complete = await _read_stream(page, request_id, maxsize or 1 << 62, chunks)
    except CDPError:  # the connection broke mid-body: what came is kept
        return b"".join(chunks), True
    if not complete:
        raise ResponseTooLarge(url, read, maxsize, expected=False)
    body = b"".join(chunks)
    return body, expected is not None and len(body) < expected


async def _read_stream(
    page: PageHandle, request_id: str, limit: int, chunks: list[bytes] | None = None
) -> tuple[bytes, int, bool]:
    """The body as a stream, read until its end or until more than ``limit``
    bytes came: ``(at most limit bytes, bytes read, whether it ended)``; the
    stream is closed either way. ``chunks``: where the chunks read go (the
    caller's list keeps them when a read fails)."""
    taken = await page.command("Fetch.takeResponseBodyAsStream", {"requestId": request_id})
    handle = taken["stream"]
    chunks = [] if chunks is None else chunks
    size = 0
    try:
        while True:
            result = await page.command("IO.read", {"handle": handle, "size": STREAM_READ_BYTES})
            data = result.get("data", "")
            chunk = base64.b64decode(data) if result.get("base64Encoded") else data.encode()
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(chunks)[:limit], size, False
            if result.get("eof"):
                return b"".join(chunks), size, True
    finally:
        closing = asyncio.ensure_future(page.command("IO.close", {"handle": handle}))
        closing.add_done_callback(_ignore_result)


def _ignore_result(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # an answer nobody waits for (the page may be gone)
