"""``/big/*``: large rendered pages (issue 27 item 6).

- ``/big/page?mb=N``: an HTML page of about ``N`` MiB (at most 64) of small
  paragraphs, ending with ``<p id="end">end</p>``; its DOM takes a browser
  a while to serialize.
- ``/big/blob?mb=N``: ``N`` MiB (at most 1024) of bytes, ``Content-Length``
  announced, written 1 MiB at a time (never held whole).
- ``/big/fetch?mb=N``: a page whose script ``fetch()``-es ``/big/blob?mb=N``
  and reads it whole; ``#got`` then shows its length in bytes, or
  ``failed`` when the fetch was refused or cut. With ``stream=K``, it fetches
  ``/oversize/stream?key=K`` instead (``N`` MiB of text, chunked: no
  ``Content-Length``; ``/oversize/sent?key=K`` tells how much was sent),
  with ``private=1`` marked ``Cache-Control: private``.
"""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()

_ROW = "<p class=row>lorem ipsum dolor sit amet, consectetur adipiscing elit</p>\n"


@routes.get("/big/page")
async def big_page(request: web.Request) -> web.Response:
    size = int_query(request, "mb", 6, 1, 64) << 20
    rows = _ROW * (size // len(_ROW))
    head = "<!doctype html><html><head><title>Big</title></head><body>"
    body = f'{head}{rows}<p id="end">end</p></body></html>'
    return web.Response(body=body.encode(), content_type="text/html", charset="utf-8")


@routes.get("/big/blob")
async def big_blob(request: web.Request) -> web.StreamResponse:
    size = int_query(request, "mb", 64, 1, 1024) << 20
    response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
    response.content_length = size
    await response.prepare(request)
    chunk = b"x" * (1 << 20)
    try:
        for _ in range(size >> 20):
            await response.write(chunk)
    except (ConnectionError, RuntimeError):
        pass  # the client stopped reading: what the test expects
    return response


@routes.get("/big/fetch")
async def big_fetch(request: web.Request) -> web.Response:
    mb = int_query(request, "mb", 64, 1, 1024)
    key = request.query.get("stream")
    source = f"/big/blob?mb={mb}"
    if key is not None:
        source = f"/oversize/stream?type=text&key={quote(key)}&bytes={mb << 20}"
        if request.query.get("private") == "1":
            source += "&private=1"
    script = (
        f"fetch('{source}').then(r => r.arrayBuffer())"
        ".then(b => { got.textContent = String(b.byteLength); },"
        " () => { got.textContent = 'failed'; });"
    )
    body = f'<p id="got"></p><script>const got = document.getElementById("got"); {script}</script>'
    return html_response("Fetch", body)
