"""Pages whose behaviour only shows in a browser: JavaScript, subresources,
navigation, encodings, slowness and runaway scripts.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from .common import html_page, html_response, int_query, park

routes = web.RouteTableDef()

# /never parks its handler on this event, which nothing ever sets.
NEVER = web.AppKey("never", asyncio.Event)

JS_LIST = """<div id="list"></div>
<script>
(function () {
  var list = document.getElementById("list");
  for (var i = 1; i <= %d; i++) {
    var p = document.createElement("p");
    p.className = "item";
    p.textContent = "item-" + i;
    list.appendChild(p);
  }
  document.body.dataset.rendered = "yes";
})();
</script>"""


@routes.get("/js")
async def js(request: web.Request) -> web.Response:
    """``n`` (default 3) ``<p class="item">item-1</p>``... made by inline JS.

    Once done the script sets ``<body data-rendered="yes">``. Without
    JavaScript the ``#list`` div stays empty and body has no attribute.
    """
    n = int_query(request, "n", 3, 0, 1000)
    return html_response("JS list", JS_LIST % n)


@routes.get("/hanging-image")
async def hanging_image(request: web.Request) -> web.Response:
    """A page whose only image (``/never``) never loads."""
    return html_response(
        "Hanging image",
        '<p id="ready">ready</p>\n<img src="/never" alt="never loads">',
    )


@routes.get("/never")
async def never(request: web.Request) -> web.StreamResponse:
    """Never answers; other requests are served meanwhile.

    The handler is cancelled when the client disconnects or the site stops.
    """
    await park(request, request.app[NEVER].wait())
    raise web.HTTPInternalServerError(text="the never event was set")


@routes.get("/self-navigate")
async def self_navigate(request: web.Request) -> web.Response:
    """Replaces itself with /js?n=2 while loading."""
    return html_response(
        "Self navigate",
        "<p id=\"origin\">self-navigate</p>\n<script>location.replace('/js?n=2');</script>",
    )


@routes.get("/nav-loop")
async def nav_loop(request: web.Request) -> web.Response:
    """Page ``n`` sends the browser to page ``n + 1``, without end: by
    script (``how=script``, ``location.href``) or by ``<meta http-equiv=refresh>``
    (``how=refresh``); ``key`` is kept, for hit counts."""
    n = int_query(request, "n", 0, 0, 1_000_000)
    key = request.query.get("key", "")
    how = request.query.get("how", "script")
    following = f"/nav-loop?n={n + 1}&amp;how={how}&amp;key={key}"
    if how == "refresh":
        head = f'<meta http-equiv="refresh" content="0; url={following}">'
        return html_response("Loop", f'{head}<p id="n">{n}</p>')
    script = following.replace("&amp;", "&")
    return html_response("Loop", f'<p id="n">{n}</p><script>location.href = "{script}";</script>')


@routes.get("/click-to-404")
async def click_to_404(request: web.Request) -> web.Response:
    """A link (``a#go``) to /status/404."""
    return html_response("Click", '<a id="go" href="/status/404">go</a>')


@routes.get("/latin1")
async def latin1(request: web.Request) -> web.Response:
    """An ISO-8859-1 page: ``<p id="t">café naïve</p>`` as latin-1 bytes."""
    document = html_page("Latin-1", '<p id="t">café naïve</p>', charset="iso-8859-1")
    return web.Response(
        body=document.encode("iso-8859-1"),
        headers={"Content-Type": "text/html; charset=iso-8859-1"},
    )


@routes.get("/slow")
async def slow(request: web.Request) -> web.Response:
    """``<p id="slow">done</p>`` after ``ms`` milliseconds (default 1000)."""
    ms = int_query(request, "ms", 1000, 0, 600_000)
    await park(request, asyncio.sleep(ms / 1000))
    return html_response("Slow", '<p id="slow">done</p>')


@routes.get("/busy-loop")
async def busy_loop(request: web.Request) -> web.Response:
    """A page whose inline script never ends (``for(;;){}``); with
    ``at=load``, its load event's handler (the document parsed, the load
    event never reported)."""
    script = "onload = () => { for(;;){} };" if request.query.get("at") == "load" else "for(;;){}"
    return html_response("Busy loop", f'<p id="before">before</p>\n<script>{script}</script>')


@routes.get("/external-script")
async def external_script(request: web.Request) -> web.Response:
    """``<p id="from-script">loaded</p>``, written by an external script
    (``/external-script.js``): without it, ``#out`` stays empty."""
    return html_response(
        "External script", '<div id="out"></div><script src="/external-script.js"></script>'
    )


@routes.get("/external-script.js")
async def external_script_js(request: web.Request) -> web.Response:
    return web.Response(
        text="document.getElementById('out').innerHTML = '<p id=\"from-script\">loaded</p>';",
        content_type="application/javascript",
    )
