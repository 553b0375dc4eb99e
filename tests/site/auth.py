"""``/auth/*``: a page whose own script calls an API behind HTTP basic auth
(issue 27 item 8), as a single-page app behind a login prompt does.

- ``/auth/app?other=URL``: 401 unless basic ``user:secret``; then a page that
  fetches ``/auth/api`` (its own origin) and ``URL`` (another origin's API,
  optional) and writes what each answered in ``#same`` and ``#other``.
- ``/auth/api``: 401 with ``WWW-Authenticate: Basic`` unless basic
  ``user:secret``; then ``items 1,2``. Allows any origin (CORS), and records
  each request's ``Host`` and whether it carried credentials:
  ``/auth/seen`` answers them as JSON.
"""

from __future__ import annotations

import base64
import json

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()

#: what /auth/api saw: [{"host": ..., "credentials": bool}]
SEEN = web.AppKey("auth_seen", list)
_EXPECTED = "Basic " + base64.b64encode(b"user:secret").decode()
_CHALLENGE = {"WWW-Authenticate": 'Basic realm="api"'}
_CORS = {"Access-Control-Allow-Origin": "*"}


@routes.get("/auth/app")
async def app(request: web.Request) -> web.Response:
    if request.headers.get("Authorization") != _EXPECTED:
        return web.Response(status=401, text="no", headers=_CHALLENGE)
    other = request.query.get("other", "")
    calls = 'show("same", "/auth/api")' + (f', show("other", {json.dumps(other)})' if other else "")
    body = f"""<p id="same">pending</p><p id="other">pending</p>
<script>
const show = (id, url) => fetch(url).then(r => r.status === 200 ? r.text() : "status " + r.status)
  .catch(e => "failed").then(t => {{ document.getElementById(id).textContent = t; }});
Promise.all([{calls}]).then(() => document.body.setAttribute("data-done", "1"));
</script>"""
    return html_response("Auth app", body)


@routes.get("/auth/api")
async def api(request: web.Request) -> web.Response:
    given = request.headers.get("Authorization")
    request.app[SEEN].append({"host": request.host, "credentials": given is not None})
    if given != _EXPECTED:
        return web.Response(status=401, text="no", headers={**_CHALLENGE, **_CORS})
    return web.Response(text="items 1,2", headers=_CORS)


@routes.get("/auth/seen")
async def seen(request: web.Request) -> web.Response:
    return web.json_response(request.app[SEEN])
