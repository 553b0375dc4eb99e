"""Subresources with every kind of cache header, for the browsers' HTTP cache.

- ``/cache/<key>/page``: an HTML page loading the five scripts below; each
  script appends its name to ``<body data-ran>``, so the rendered page shows
  which ran.
- ``/cache/<key>/<name>.js``: ``bundle`` (``public, max-age=3600``: may be
  stored), ``no-store``, ``set-cookie`` (``max-age=3600`` but it sets a
  cookie), ``vary-cookie`` (``max-age=3600``, ``Vary: Cookie``; its body
  names the cookie it was asked with) and ``private`` (``private,
  max-age=3600``). The page then adds ``cookie-set`` if set-cookie.js's
  cookie reached it.

``key`` keeps each test's counts apart in ``/stats`` ``hits`` (by path).
"""

from __future__ import annotations

from aiohttp import web

from .common import html_page

routes = web.RouteTableDef()

SCRIPTS: dict[str, dict[str, str]] = {
    "bundle": {"Cache-Control": "public, max-age=3600"},
    "no-store": {"Cache-Control": "no-store"},
    "set-cookie": {"Cache-Control": "public, max-age=3600", "Set-Cookie": "seen=1; Path=/"},
    "vary-cookie": {"Cache-Control": "public, max-age=3600", "Vary": "Cookie"},
    "private": {"Cache-Control": "private, max-age=3600"},
}


@routes.get("/cache/{key}/page")
async def page(request: web.Request) -> web.Response:
    key = request.match_info["key"]
    scripts = "".join(f'<script src="/cache/{key}/{name}.js"></script>' for name in SCRIPTS)
    # Last: whether set-cookie.js's cookie reached the page.
    seen = (
        "<script>if (document.cookie.indexOf('seen=1') >= 0)"
        " document.body.dataset.ran += 'cookie-set;';</script>"
    )
    body = f"<p>cache test</p>{scripts}{seen}"
    return web.Response(text=html_page("cache", body), content_type="text/html")


@routes.get("/cache/{key}/{name}.js")
async def script(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in SCRIPTS:
        raise web.HTTPNotFound()
    label = name
    if name == "vary-cookie":
        label = f"{name}:{request.cookies.get('user', '-')}"
    js = f"document.body.dataset.ran = (document.body.dataset.ran || '') + '{label};';"
    return web.Response(text=js, content_type="application/javascript", headers=SCRIPTS[name])
