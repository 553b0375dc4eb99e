"""HTTP-level behaviour: echo, redirects with cookies, error statuses.

These routes check that a request's method, headers, cookies and body
reach the site unchanged, and that redirects, cookies and statuses come
back to Scrapy the way they were sent.
"""

from __future__ import annotations

import json
from html import escape

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()


def parse_cookie_header(value: str) -> dict[str, str]:
    """Split a ``Cookie`` header (``a=1; b=2``) into a dict, leniently."""
    cookies = {}
    for part in value.split(";"):
        name, sep, cookie_value = part.strip().partition("=")
        if sep and name:
            cookies[name] = cookie_value
    return cookies


async def echo_data(request: web.Request) -> dict[str, object]:
    """What the request looked like when it reached the site."""
    headers: dict[str, str] = {}
    for name, value in request.headers.items():
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    cookie_header = "; ".join(request.headers.getall("Cookie", []))
    body = await request.read()
    return {
        "method": request.method,
        "path": request.path,
        "query": request.query_string,
        "headers": headers,
        "cookies": parse_cookie_header(cookie_header),
        "body_hex": body.hex(),
        "content_type": request.headers.get("Content-Type"),
    }


@routes.route("*", "/echo")
async def echo(request: web.Request) -> web.Response:
    """Any method: the request as JSON.

    Keys: method, path, query, headers (name as sent -> value; repeated
    headers joined with ", "), cookies (Cookie header parsed), body_hex,
    content_type (the raw Content-Type header, or null).
    """
    return web.json_response(await echo_data(request))


@routes.route("*", "/echo-html")
async def echo_html(request: web.Request) -> web.Response:
    """Any method: the same JSON as /echo inside ``<pre id="echo">``."""
    data = json.dumps(await echo_data(request), indent=1, sort_keys=True)
    return html_response("Echo", f'<pre id="echo">{escape(data, quote=False)}</pre>')


@routes.get("/redirect/start")
async def redirect_start(request: web.Request) -> web.Response:
    """302 to /redirect/mid, setting cookie ``hop=1; Path=/``."""
    response = web.Response(status=302, headers={"Location": "/redirect/mid"})
    response.set_cookie("hop", "1", path="/")
    return response


@routes.get("/redirect/mid")
async def redirect_mid(request: web.Request) -> web.Response:
    """301 to /redirect/final."""
    return web.Response(status=301, headers={"Location": "/redirect/final"})


@routes.get("/redirect/final")
async def redirect_final(request: web.Request) -> web.Response:
    """The end of the chain: shows the Cookie header it received."""
    cookie = escape(request.headers.get("Cookie", ""))
    return html_response("Final", f'<h1 id="final">final</h1>\n<p id="cookies">{cookie}</p>')


@routes.get(r"/status/{code:\d{3}}")
async def status(request: web.Request) -> web.Response:
    """An HTML page with the given status (200-599 except 204 and 304).

    The response carries ``X-Test-Status: <code>``; the body has
    ``<h1 id="status"><code></h1>``.
    """
    code = int(request.match_info["code"])
    if not 200 <= code <= 599 or code in (204, 304):
        raise web.HTTPNotFound(text="unsupported status")
    return html_response(
        f"Status {code}",
        f'<h1 id="status">{code}</h1>',
        status=code,
        headers={"X-Test-Status": str(code)},
    )


@routes.get("/set-cookies")
async def set_cookies(request: web.Request) -> web.Response:
    """200 with two Set-Cookie headers: ``a=1; Path=/`` and ``b=2; Path=/``."""
    response = html_response("Cookies", '<p id="set">a and b set</p>')
    response.set_cookie("a", "1", path="/")
    response.set_cookie("b", "2", path="/")
    return response
