"""Signed-in sessions: a ``session`` cookie set by /login, checked by /account,
refreshed by /refresh, recorded per value by /session-inflight.

A session cookie is valid when its value starts with ``valid-`` (stateless on
purpose: a profile file can carry a valid or an expired session).

- ``/session-inflight?ms=N[&status=S]``: holds the request ``N`` ms (default
  100) and records, in ``/stats`` ``inflight_max``, the most requests in flight
  at once per session cookie value, under the key ``session:<value>``; answers
  with status ``S`` (default 200).
- ``/login``: GET without ``user`` shows ``<form id="login">``; GET with
  ``?user=NAME`` or POST ``user=NAME`` sets ``session=valid-NAME`` (one hour)
  and redirects to ``next`` (default ``/account``).
- ``/account``: ``<h1 id="account">NAME</h1>`` for a valid session, else a 302
  to ``/login?next=/account``.
- ``/refresh``: a new value for a valid session cookie, ``<old>.r<k>`` (k the
  number of refreshes so far plus one), with ``Max-Age=3600``.
- ``/whoami``: the User-Agent, Accept-Language, ``X-*`` headers and cookies the
  server received, and what the page's JavaScript sees (``navigator.userAgent``,
  ``navigator.language``, the time zone, the viewport width).
- ``/sign-out?how=fetch|cookie``: the page's script signs out, by ``fetch()`` of
  ``/sign-out-api`` (``Set-Cookie: session=; Max-Age=0``) or by
  ``document.cookie``, then shows ``signed out`` in ``#state``.
- ``/local-storage``: the page's JavaScript writes localStorage (as JSON) into
  ``#storage``; ``?set=NAME:VALUE`` sets an item first.
"""

from __future__ import annotations

import asyncio
import json
from html import escape

from aiohttp import web

from .common import html_response, int_query, park, script_json
from .protocol import parse_cookie_header
from .stats import STATS

routes = web.RouteTableDef()

COOKIE = "session"
LOGIN_FORM = """<form id="login" method="post" action="/login">
<input id="user" name="user"><input type="hidden" name="next" value="%s">
<button id="sign-in" type="submit">Sign in</button></form>"""

WHOAMI_SCRIPT = """<pre id="js"></pre>
<script>
document.getElementById("js").textContent = JSON.stringify({
  userAgent: navigator.userAgent,
  language: navigator.language,
  timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  width: window.innerWidth,
});
</script>"""

STORAGE_SCRIPT = """<pre id="storage"></pre>
<script>
(function () {
  var set = %s;
  if (set) localStorage.setItem(set[0], set[1]);
  var items = {};
  for (var i = 0; i < localStorage.length; i++) {
    var key = localStorage.key(i);
    items[key] = localStorage.getItem(key);
  }
  document.getElementById("storage").textContent = JSON.stringify(items);
})();
</script>"""


def session_of(request: web.Request) -> str:
    return parse_cookie_header(request.headers.get("Cookie", "")).get(COOKIE, "")


@routes.get("/session-inflight")
async def session_inflight(request: web.Request) -> web.Response:
    key = f"session:{session_of(request) or '-'}"
    ms = int_query(request, "ms", 100, 0, 60_000)
    records = request.app[STATS]
    records.enter(key)
    try:
        await park(request, asyncio.sleep(ms / 1000))
    finally:
        records.leave(key)
    status = int_query(request, "status", 200, 200, 599)
    return html_response("Session", f'<p id="session">{escape(key)}</p>', status=status)


@routes.route("*", "/login")
async def login(request: web.Request) -> web.Response:
    data = dict(request.query)
    if request.method == "POST":
        data.update({k: str(v) for k, v in (await request.post()).items()})
    user = data.get("user", "")
    target = data.get("next", "/account")
    if not target.startswith("/"):
        target = "/account"
    if not user:
        return html_response("Sign in", LOGIN_FORM % escape(target))
    response = web.Response(status=302, headers={"Location": target})
    response.set_cookie(COOKIE, f"valid-{user}", path="/", max_age=3600)
    return response


@routes.get("/account")
async def account(request: web.Request) -> web.Response:
    session = session_of(request)
    if not session.startswith("valid-"):
        return web.Response(status=302, headers={"Location": "/login?next=/account"})
    user = session.removeprefix("valid-").split(".r")[0]
    return html_response("Account", f'<h1 id="account">{escape(user)}</h1>')


@routes.get("/refresh")
async def refresh(request: web.Request) -> web.Response:
    session = session_of(request)
    if not session.startswith("valid-"):
        return web.Response(status=302, headers={"Location": "/login?next=/refresh"})
    new = f"{session}.r{session.count('.r') + 1}"
    response = html_response("Refreshed", f'<p id="refreshed">{escape(new)}</p>')
    response.set_cookie(COOKIE, new, path="/", max_age=3600)
    return response


@routes.get("/whoami")
async def whoami(request: web.Request) -> web.Response:
    seen = {
        "userAgent": request.headers.get("User-Agent", ""),
        "acceptLanguage": request.headers.get("Accept-Language", ""),
        "headers": {k: v for k, v in request.headers.items() if k.lower().startswith("x-")},
        "cookies": parse_cookie_header(request.headers.get("Cookie", "")),
    }
    body = f'<pre id="server">{escape(json.dumps(seen, sort_keys=True))}</pre>\n{WHOAMI_SCRIPT}'
    return html_response("Who am I", body)


@routes.get("/local-storage")
async def local_storage(request: web.Request) -> web.Response:
    name, sep, value = request.query.get("set", "").partition(":")
    item = [name, value] if sep and name else None
    return html_response("Local storage", STORAGE_SCRIPT % script_json(item))


SIGN_OUT_SCRIPT = """<p id="state">signed in</p>
<script>
(async function () {
  if (%s) {
    await fetch("/sign-out-api");  // answered Set-Cookie: session=; Max-Age=0
  } else {
    document.cookie = "session=; Max-Age=0; Path=/";
  }
  document.getElementById("state").textContent = "signed out";
})();
</script>"""


@routes.get("/sign-out")
async def sign_out(request: web.Request) -> web.Response:
    """A page that signs out by script: ``?how=fetch`` (its API answers
    ``Max-Age=0``) or ``?how=cookie`` (``document.cookie``)."""
    by_fetch = "true" if request.query.get("how") == "fetch" else "false"
    return html_response("Sign out", SIGN_OUT_SCRIPT % by_fetch)


@routes.get("/sign-out-api")
async def sign_out_api(request: web.Request) -> web.Response:
    response = web.json_response({"signed_out": True})
    response.set_cookie(COOKIE, "", path="/", max_age=0)
    return response
