"""Routes for fidelity checks of rendered requests against plain Scrapy
(issue 13): large request bodies, pages that navigate themselves after load,
what the server and the page see of the user agent. Proxies use
``python -m tests.site.proxy`` with ``/echo-html``; TLS uses this site served
over HTTPS (``python -m tests.site --tls``).

- ``/body-digest`` (any method): ``{"method", "length", "sha256"}`` of the
  request body, as JSON.
- ``/self-post``: a GET answers 200 with a page whose ``onload`` submits a
  POST form back to the same URL (201), or with ``how=location`` goes to the
  same URL plus ``&arrived=1`` (202); ``delay=MS`` does it that many
  milliseconds after the load event. Each document says which it is in
  ``<p id="doc">`` and in an ``X-Doc`` header (``get``/``post``/``arrived``),
  and carries the request's ``run`` query parameter, so a response whose
  status, header and body come from different documents shows it.
- ``/ua``: the ``User-Agent`` and ``Sec-CH-UA*`` headers the server got
  (``<pre id="headers">`` JSON) and, once the page's script ran,
  ``navigator.userAgent``, ``navigator.webdriver`` and
  ``navigator.userAgentData`` (``<pre id="navigator">`` JSON).
"""

from __future__ import annotations

import hashlib
import json
from html import escape

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()


@routes.route("*", "/body-digest")
async def body_digest(request: web.Request) -> web.Response:
    body = await request.read()
    return web.json_response(
        {"method": request.method, "length": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    )


@routes.route("*", "/self-post")
async def self_post(request: web.Request) -> web.Response:
    run = escape(request.query.get("run", ""))
    if request.method == "POST":
        field = escape(str((await request.post()).get("f", "")))
        return html_response(
            "Posted",
            f'<p id="doc">post</p><p id="run">{run}</p><p id="field">{field}</p>',
            status=201,
            headers={"X-Doc": "post"},
        )
    if request.query.get("arrived"):
        return html_response(
            "Arrived",
            f'<p id="doc">arrived</p><p id="run">{run}</p>',
            status=202,
            headers={"X-Doc": "arrived"},
        )
    if request.query.get("how") == "location":
        go = "location.href = location.href + '&arrived=1';"
    else:
        go = 'document.getElementById("form").submit();'
    onload = f"{{ {go} }}"
    if request.query.get("delay"):  # milliseconds after the load event
        onload = f"setTimeout(() => {onload}, {int(request.query['delay'])})"
    return html_response(
        "Before",
        f'<p id="doc">get</p><p id="run">{run}</p>'
        '<form id="form" method="post"><input name="f" value="sent"></form>'
        f"<script>window.onload = () => {onload};</script>",
        headers={"X-Doc": "get"},
    )


@routes.get("/ua")
async def user_agent(request: web.Request) -> web.Response:
    seen = {
        name: value
        for name, value in request.headers.items()
        if name.lower() == "user-agent" or name.lower().startswith("sec-ch-ua")
    }
    script = (
        "const d = navigator.userAgentData;"
        "document.getElementById('navigator').textContent = JSON.stringify({"
        " userAgent: navigator.userAgent, webdriver: navigator.webdriver,"
        " userAgentData: d ? {brands: d.brands, mobile: d.mobile, platform: d.platform} : null"
        "});"
    )
    return html_response(
        "User agent",
        f'<pre id="headers">{escape(json.dumps(seen))}</pre><pre id="navigator"></pre>'
        f"<script>{script}</script>",
    )
