"""Routes for comparing a rendered request with plain Scrapy (issue 13).

Everything here answers without JavaScript unless its docstring says so, so
plain Scrapy and a browser can fetch the same thing and be compared:

- ``/fid/encoded/<name>``: a document sent with ``Content-Encoding`` (gzip or
  br): ``csv`` (an attachment), ``json`` (br), ``pdf``, ``html``, ``text``
  (gzip, ``text/plain; charset=windows-1251``).
- ``/fid/redirect/<code>?to=<path>&cookie=<name>&body=<text>``: any method; a
  ``<code>`` redirect to ``to``, setting cookie ``<name>=<code>`` and with a
  text body when asked.
- ``/fid/chain``: 302 → 301 → 303 → 307 → 308 → ``/fid/cookies``, each hop
  setting its own cookie.
- ``/fid/login`` → 302 ``/fid/home`` with ``sid``; ``/fid/home`` sets ``theme``.
- ``/fid/cookies``: the cookies received, as JSON.
- ``/fid/cookie-attrs``: sets cookies with Domain-less, Path, Max-Age,
  Secure-less HttpOnly and SameSite attributes.
- ``/fid/js-cookies`` (needs JavaScript): sets ``jsc`` with ``document.cookie``
  and ``xhrc`` through a ``fetch`` of ``/fid/xhr-cookie``, then marks
  ``<body data-done="yes">``.
- ``/fid/basic-auth``: 401 with ``WWW-Authenticate`` unless HTTP basic
  ``user:secret``.
- ``/fid/304``, ``/fid/status/<code>.txt`` (plain text with any status).
- ``/fid/charset``: ``text/html; charset=windows-1251`` page.
"""

from __future__ import annotations

import base64
import gzip
import json

import brotli
from aiohttp import web

from .assets import build_pdf
from .common import html_page, html_response
from .protocol import parse_cookie_header

routes = web.RouteTableDef()

CSV = "id,name\n1,café\n2,naïve\n".encode()
JSON_DOC = {"items": [1, 2, 3], "name": "café"}
TEXT_1251 = "Привет, мир\n".encode("cp1251")
CHAIN = (302, 301, 303, 307, 308)


def _encoded(name: str) -> tuple[bytes, dict[str, str]]:
    if name == "csv":
        return gzip.compress(CSV), {
            "Content-Type": "text/csv",
            "Content-Encoding": "gzip",
            "Content-Disposition": 'attachment; filename="data.csv"',
        }
    if name == "json":
        return brotli.compress(json.dumps(JSON_DOC).encode()), {
            "Content-Type": "application/json",
            "Content-Encoding": "br",
        }
    if name == "pdf":
        return gzip.compress(build_pdf()), {
            "Content-Type": "application/pdf",
            "Content-Encoding": "gzip",
        }
    if name == "html":
        page = html_page("Encoded", '<p id="enc">gzip café</p>')
        return gzip.compress(page.encode()), {
            "Content-Type": "text/html; charset=utf-8",
            "Content-Encoding": "gzip",
        }
    if name == "text":
        return gzip.compress(TEXT_1251), {
            "Content-Type": "text/plain; charset=windows-1251",
            "Content-Encoding": "gzip",
        }
    raise web.HTTPNotFound(text="unknown encoded document")


@routes.route("*", r"/fid/encoded/{name}")
async def encoded(request: web.Request) -> web.Response:
    """The named document, compressed (see the module docstring)."""
    body, headers = _encoded(request.match_info["name"])
    # aiohttp would compress again or set its own Content-Type: bytes as is.
    return web.Response(body=body, headers=headers)


@routes.route("*", r"/fid/redirect/{code:\d{3}}")
async def redirect(request: web.Request) -> web.Response:
    """A ``code`` redirect to ``to`` (default ``/echo``), with cookie
    ``<cookie>=<code>; Path=/`` when ``cookie`` is given and ``body`` as a text
    body."""
    code = int(request.match_info["code"])
    if code not in (301, 302, 303, 307, 308):
        raise web.HTTPNotFound(text="not a redirect status")
    response = web.Response(
        status=code,
        headers={"Location": request.query.get("to", "/echo")},
        text=request.query.get("body"),
    )
    if request.query.get("cookie"):
        response.set_cookie(request.query["cookie"], str(code), path="/")
    return response


@routes.get("/fid/chain")
async def chain(request: web.Request) -> web.Response:
    """The first hop of 302 → 301 → 303 → 307 → 308 → /fid/cookies."""
    step = int(request.query.get("step", "0"))
    if step >= len(CHAIN):
        raise web.HTTPFound("/fid/cookies")
    code = CHAIN[step]
    target = f"/fid/chain?step={step + 1}" if step + 1 < len(CHAIN) else "/fid/cookies"
    response = web.Response(status=code, headers={"Location": target})
    response.set_cookie(f"hop{step}", str(code), path="/")
    return response


@routes.get("/fid/login")
async def login(request: web.Request) -> web.Response:
    """302 to /fid/home, setting ``sid=s3cr3t; Path=/; HttpOnly``."""
    response = web.Response(status=302, headers={"Location": "/fid/home"})
    response.set_cookie("sid", "s3cr3t", path="/", httponly=True)
    return response


@routes.get("/fid/home")
async def home(request: web.Request) -> web.Response:
    """Sets ``theme=dark; Path=/`` and shows the cookies received."""
    cookie = parse_cookie_header(request.headers.get("Cookie", ""))
    response = html_response("Home", f'<p id="cookies">{json.dumps(cookie, sort_keys=True)}</p>')
    response.set_cookie("theme", "dark", path="/")
    return response


@routes.get("/fid/cookies")
async def cookies(request: web.Request) -> web.Response:
    """The cookies received, as a JSON object."""
    return web.json_response(parse_cookie_header(request.headers.get("Cookie", "")))


@routes.get("/fid/cookie-attrs")
async def cookie_attrs(request: web.Request) -> web.Response:
    """Cookies with attributes: a path, an expiry, HttpOnly, SameSite."""
    response = html_response("Cookie attributes", '<p id="set">set</p>')
    response.set_cookie("scoped", "1", path="/fid/")
    response.set_cookie("lasting", "2", path="/", max_age=3600)
    response.set_cookie("hidden", "3", path="/", httponly=True, samesite="Lax")
    return response


@routes.get("/fid/js-cookies")
async def js_cookies(request: web.Request) -> web.Response:
    """Needs JavaScript: ``jsc`` from ``document.cookie``, ``xhrc`` from a
    ``fetch`` response; ``<body data-done="yes">`` once both are set."""
    script = (
        "<script>document.cookie = 'jsc=1; path=/; max-age=3600';"
        " fetch('/fid/xhr-cookie').then(r => r.text())"
        ".then(() => { document.body.setAttribute('data-done', 'yes'); });</script>"
    )
    return html_response("JS cookies", f'<p id="js">cookies</p>{script}')


@routes.get("/fid/xhr-cookie")
async def xhr_cookie(request: web.Request) -> web.Response:
    """Sets ``xhrc=2; Path=/``."""
    response = web.json_response({"ok": True})
    response.set_cookie("xhrc", "2", path="/")
    return response


@routes.route("*", "/fid/basic-auth")
async def basic_auth(request: web.Request) -> web.Response:
    """401 unless HTTP basic ``user:secret``; then the user name as text."""
    expected = "Basic " + base64.b64encode(b"user:secret").decode()
    if request.headers.get("Authorization") != expected:
        return web.Response(
            status=401, text="no", headers={"WWW-Authenticate": 'Basic realm="fid"'}
        )
    return web.Response(text="hello user")


@routes.get("/fid/304")
async def not_modified(request: web.Request) -> web.Response:
    """304 with an ETag and no body."""
    return web.Response(status=304, headers={"ETag": '"v1"'})


@routes.get(r"/fid/status/{code:\d{3}}.txt")
async def status_text(request: web.Request) -> web.Response:
    """Plain text with the given status (200-599 but 204 and 304)."""
    code = int(request.match_info["code"])
    if not 200 <= code <= 599 or code in (204, 304):
        raise web.HTTPNotFound(text="unsupported status")
    return web.Response(status=code, text=f"status {code}\n", headers={"X-Code": str(code)})


@routes.get("/fid/charset")
async def charset(request: web.Request) -> web.Response:
    """A windows-1251 HTML page."""
    page = html_page("Charset", '<p id="t">Привет</p>', charset="windows-1251")
    return web.Response(
        body=page.encode("cp1251"), headers={"Content-Type": "text/html; charset=windows-1251"}
    )
