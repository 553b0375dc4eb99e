"""``/hostile/*``: pages that are hard on a browser (issue 31 item 3).

- ``/hostile/iframes?n=N``: ``N`` iframes (default 1000), each of another
  origin (``localhost`` for a page on 127.0.0.1) loading a small page.
- ``/hostile/popups?n=N``: calls ``window.open`` ``N`` times (default 500)
  at load, and on every timer tick after.
- ``/hostile/push?n=N``: ``history.pushState`` ``N`` times (default 10000).
- ``/hostile/leaf``: a small page (an iframe's).
"""

from __future__ import annotations

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()


@routes.get("/hostile/iframes")
async def iframes(request: web.Request) -> web.Response:
    n = int_query(request, "n", 1000, 0, 5000)
    port = request.url.port
    frames = "".join(
        f'<iframe src="http://localhost:{port}/hostile/leaf?i={i}"></iframe>' for i in range(n)
    )
    return html_response("Iframes", f'<p id="ready">ready</p>{frames}')


@routes.get("/hostile/popups")
async def popups(request: web.Request) -> web.Response:
    n = int_query(request, "n", 500, 0, 5000)
    script = f"""<script>
function storm() {{ for (let i = 0; i < {n}; i++) window.open("/hostile/leaf?p=" + i); }}
storm(); setInterval(storm, 50);
</script>"""
    return html_response("Popups", f'<p id="ready">ready</p>{script}')


@routes.get("/hostile/push")
async def push(request: web.Request) -> web.Response:
    n = int_query(request, "n", 10000, 0, 100000)
    loop = f'for (let i = 0; i < {n}; i++) history.pushState({{}}, "", "/hostile/p" + i);'
    script = f"<script>{loop}</script>"
    return html_response("Push", f'<p id="ready">ready</p>{script}')


@routes.get("/hostile/leaf")
async def leaf(request: web.Request) -> web.Response:
    return html_response("Leaf", "<p>leaf</p>")
