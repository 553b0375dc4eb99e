"""``/dl/*``: pages that start a download (issues 27 and 31).

- ``/dl/page?to=URL&when=click|load``: a page that sends its main frame to
  ``URL`` when ``#get`` is clicked (``when=click``, default) or from its
  inline script, while it loads (``when=load``); ``#ready`` is in it.
- ``/dl/framed?to=URL``: a page framing ``URL`` (a frame's download).
- ``/dl/link?to=URL``: a page with a link to ``URL`` with the ``download``
  attribute (``#get``).
- ``/dl/plain.csv``: the same bytes, ``text/csv`` without ``Content-Disposition``.
- ``/dl/report.csv``: a small attachment (``Content-Disposition: attachment;
  filename="report.csv"``, ``text/csv``).
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()

REPORT = b"id,name\n1,alpha\n2,beta\n"


@routes.get("/dl/page")
async def page(request: web.Request) -> web.Response:
    to = json.dumps(request.query["to"])
    if request.query.get("when", "click") == "load":
        script = f"<script>location.href = {to};</script>"
    else:
        handler = f"() => {{ location.href = {to}; }}"
        script = f'<script>document.getElementById("get").onclick = {handler};</script>'
    body = f'<p id="ready">ready</p><button id="get">get</button>{script}'
    return html_response("Download page", body)


@routes.get("/dl/framed")
async def framed(request: web.Request) -> web.Response:
    src = json.dumps(request.query["to"])
    return html_response("Download page", f'<p id="ready">ready</p><iframe src={src}></iframe>')


@routes.get("/dl/link")
async def link(request: web.Request) -> web.Response:
    """An ``<a download>`` link to ``to``; with ``served=1``, once clicked
    the page asks ``/stats`` every 50 ms until the site has served ``to``
    (its path and query), then adds ``#served``."""
    href = json.dumps(request.query["to"])
    script = ""
    if request.query.get("served") == "1":
        wanted = json.dumps(urlsplit(request.query["to"])._replace(scheme="", netloc="").geturl())
        script = (
            "<script>document.getElementById('get').addEventListener('click', () => {"
            "const look = () => fetch('/stats').then(r => r.json()).then(s => {"
            f"if ((s.hits_by_url || {{}})[{wanted}]) {{"
            "const p = document.createElement('p'); p.id = 'served'; document.body.append(p);"
            "} else { setTimeout(look, 50); } });"
            "setTimeout(look, 0); });</script>"
        )
    return html_response(
        "Download page",
        f'<p id="ready">ready</p><a id="get" href={href} download>get</a>{script}',
    )


@routes.get("/dl/report.csv")
async def report(request: web.Request) -> web.Response:
    return web.Response(
        body=REPORT,
        headers={
            "Content-Type": "text/csv",
            "Content-Disposition": 'attachment; filename="report.csv"',
        },
    )


@routes.get("/dl/plain.csv")
async def plain_csv(request: web.Request) -> web.Response:
    """The same rows as ``text/csv`` without ``Content-Disposition``: a
    browser shows it, unless a ``<a download>`` link asks for it."""
    return web.Response(body=REPORT, headers={"Content-Type": "text/csv"})
