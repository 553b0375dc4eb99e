"""``/private/*``: a page that reaches into the crawler's own machine (issue 31):
its script reads a "secret" another local service hands to any origin
(``Access-Control-Allow-Origin: *``), and it frames that service."""

from __future__ import annotations

import json

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()


@routes.get("/private/secret")
async def secret(request: web.Request) -> web.Response:
    """A local service's secret, readable by any origin."""
    return web.Response(
        text="SECRET-7f3a", content_type="text/plain", headers={"Access-Control-Allow-Origin": "*"}
    )


@routes.get("/private/probe")
async def probe(request: web.Request) -> web.Response:
    """``fetch()`` each ``target`` (repeatable) and write what came back in
    ``#out-<i>`` (``refused`` when the request failed); an iframe of
    ``frame`` when given. ``#done`` appears when every fetch ended."""
    targets = request.query.getall("target", [])
    frame = request.query.get("frame")
    iframe = f'<iframe src="{frame}"></iframe>' if frame else ""
    outs = "".join(f'<p id="out-{i}"></p>' for i in range(len(targets)))
    body = f"""{outs}{iframe}<script>
const targets = {json.dumps(targets)};
Promise.all(targets.map((url, i) => fetch(url).then(r => r.text()).catch(() => "refused")
  .then(text => {{ document.getElementById("out-" + i).textContent = text; }})))
  .then(() => {{ const p = document.createElement("p"); p.id = "done";
                 document.body.appendChild(p); }});
</script>"""
    return html_response("Probe", body)


@routes.get("/private/leave")
async def leave(request: web.Request) -> web.Response:
    """A page whose script navigates the main frame to ``to`` as it loads."""
    script = f"<script>location.href = {json.dumps(request.query['to'])};</script>"
    return html_response("Leaving", script)


@routes.get("/private/redirect")
async def redirect(request: web.Request) -> web.Response:
    """302 to ``to`` (readable by any origin, as the secret)."""
    return web.Response(
        status=302,
        headers={"Location": request.query["to"], "Access-Control-Allow-Origin": "*"},
    )


@routes.get("/private/many")
async def many(request: web.Request) -> web.Response:
    """A page of ``n`` subresources (default 30): images and scripts of its
    own origin, for the cost of asking about each (docs/backends.md)."""
    n = int(request.query.get("n", "30"))
    images = "".join(f'<img src="/image.png?i={i}">' for i in range(n // 2))
    scripts = "".join(
        f'<script src="/private/script.js?i={i}"></script>' for i in range(n - n // 2)
    )
    return html_response("Many", f"<p id=ready>ready</p>{images}{scripts}")


@routes.get("/private/script.js")
async def script(request: web.Request) -> web.Response:
    return web.Response(
        text="window.loaded = (window.loaded || 0) + 1;", content_type="text/javascript"
    )
