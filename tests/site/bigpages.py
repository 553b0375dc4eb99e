"""``/big/*``: large rendered pages (issue 27 item 6).

- ``/big/page?mb=N``: an HTML page of about ``N`` MiB (at most 64) of small
  paragraphs, ending with ``<p id="end">end</p>``; its DOM takes a browser
  a while to serialize.
"""

from __future__ import annotations

from aiohttp import web

from .common import int_query

routes = web.RouteTableDef()

_ROW = "<p class=row>lorem ipsum dolor sit amet, consectetur adipiscing elit</p>\n"


@routes.get("/big/page")
async def big_page(request: web.Request) -> web.Response:
    size = int_query(request, "mb", 6, 1, 64) << 20
    rows = _ROW * (size // len(_ROW))
    head = "<!doctype html><html><head><title>Big</title></head><body>"
    body = f'{head}{rows}<p id="end">end</p></body></html>'
    return web.Response(body=body.encode(), content_type="text/html", charset="utf-8")
