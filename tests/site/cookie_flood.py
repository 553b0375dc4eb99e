"""``/flood/*``: a page that writes many cookies from its script (issue 31).

- ``/flood/page?n=N&size=S``: sets ``N`` script cookies ``cNNNN`` of ``S``
  (default 24) bytes of value each, and one of 5000 bytes (``big``), then
  shows ``#done``.
- ``/flood/count?i=I``: how many cookies the request carried (``#count``).

The site (aiohttp) answers 400 to a header line past 8190 bytes, as Apache
and nginx do with their defaults.
"""

from __future__ import annotations

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()


@routes.get("/flood/page")
async def page(request: web.Request) -> web.Response:
    n = int_query(request, "n", 500, 0, 10_000)
    size = int_query(request, "size", 24, 1, 4000)
    body = f"""<script>
for (let i = 0; i < {n}; i++) {{
  document.cookie = "c" + String(i).padStart(4, "0") + "=" + "v".repeat({size}) + "; path=/";
}}
document.cookie = "big=" + "x".repeat(5000) + "; path=/";
const p = document.createElement("p"); p.id = "done"; document.body.appendChild(p);
</script>"""
    return html_response("Flood", body)


@routes.get("/flood/count")
async def count(request: web.Request) -> web.Response:
    cookies = request.headers.get("Cookie", "")
    n = len([part for part in cookies.split(";") if part.strip()])
    return html_response("Count", f'<p id="count">{n}</p>')
