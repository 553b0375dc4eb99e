"""``/hist/*``: pages that change their URL without a new document (issue 27):
``history.pushState``/``replaceState`` and fragment changes, at load or on a
click, with relative links that resolve against the page's URL."""

from __future__ import annotations

import json

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()

_LINKS = '<a class="item" href="item-1">one</a><a class="item" href="item-2">two</a>'


@routes.get("/hist/app")
async def pushed(request: web.Request) -> web.Response:
    """pushState at load to /hist/catalog/list/ (what=replace: replaceState)."""
    call = "replaceState" if request.query.get("what") == "replace" else "pushState"
    body = f"""<div id="links">{_LINKS}</div>
<script>history.{call}({{}}, "", "/hist/catalog/list/");</script>"""
    return html_response("Pushed", body)


@routes.get("/hist/hash")
async def hashed(request: web.Request) -> web.Response:
    """Sets location.hash at load (when=now) or not at all (when=never: only
    a click on the anchor to #done sets it)."""
    when = request.query.get("when", "now")
    setters = {
        "now": 'location.hash = "filter";',
        "never": "",
    }
    setter = setters[when]
    body = f"""<p id="ready">ready</p><a id="to-done" href="#done">done</a>
<div id="target"></div><script>{setter}</script>"""
    return html_response("Hash", body)


#: the minimal page for Lightpanda's stale ``window.location`` after a
#: fragment navigation (docs/backends.md, "What Lightpanda does not do")
HELD_LOCATION = """<!doctype html>
<p id="out">waiting</p>
<script>
  var held = window.location;
  window.addEventListener("hashchange", function () {
    document.getElementById("out").textContent = JSON.stringify({
      same: held === window.location, held: held.hash, live: window.location.hash
    });
  });
  location.hash = "#completed";
</script>"""


@routes.get("/hist/held-location")
async def held_location(request: web.Request) -> web.Response:
    """A script holds ``window.location``, sets ``location.hash``, and on
    ``hashchange`` writes into ``#out`` whether the held object is still
    ``window.location`` and the hash each reads (a browser: the same object,
    both ``#completed``)."""
    return web.Response(text=HELD_LOCATION, content_type="text/html")


@routes.get("/hist/catalog/list/item-{n}")
async def item(request: web.Request) -> web.Response:
    return html_response("Item", f'<p id="item">{request.match_info["n"]}</p>')


@routes.get("/hist/item-{n}")
async def wrong_item(request: web.Request) -> web.Response:
    return html_response("Wrong", '<p id="wrong">resolved against the requested URL</p>')


@routes.get("/hist/late")
async def late(request: web.Request) -> web.Response:
    """An element ``#late`` added ``ms`` milliseconds after load (for waits
    that must use their whole timeout)."""
    ms = int(request.query.get("ms", "1000"))
    body = f"""<p id="ready">ready</p><script>addEventListener("load", () => setTimeout(() => {{
  const p = document.createElement("p"); p.id = "late"; p.textContent = "late";
  document.body.appendChild(p); }}, {ms}));</script>"""
    return html_response("Late", body)


@routes.get("/hist/refresh")
async def refresh(request: web.Request) -> web.Response:
    """Sends the browser on to /hist/catalog/list/item-3 at once: by
    ``<meta http-equiv=refresh>`` (how=meta) or by script (how=script)."""
    target = "/hist/catalog/list/item-3"
    if request.query.get("how") == "script":
        return html_response("Away", f'<script>location.replace("{target}");</script>')
    return html_response("Away", f'<meta http-equiv="refresh" content="0; url={target}">')


@routes.get("/robots.txt")
async def robots(request: web.Request) -> web.Response:
    """Disallows /hist/private/ only (the robots tests' own path)."""
    return web.Response(text="User-agent: *\nDisallow: /hist/private/\n")


_LEAVES = {
    "href": "location.href = {to};",
    "replace": "location.replace({to});",
    "assign": "window.location = {to};",
    "timeout": "setTimeout(() => {{ location.href = {to}; }}, 50);",
    "load": 'addEventListener("load", () => {{ location.href = {to}; }});',
    "timer0": "setTimeout(() => {{ location.href = {to}; }}, 0);",
    "ready": 'document.addEventListener("DOMContentLoaded", () => {{ location.href = {to}; }});',
}


@routes.get("/hist/leave")
async def leave(request: web.Request) -> web.Response:
    """A page whose script sends the browser to ``to`` at load: by
    ``location.href`` (how=href, default), ``location.replace`` (replace),
    ``window.location =`` (assign), from a 50 ms timer (timeout), a 0 ms one
    (timer0), the ``DOMContentLoaded`` event (ready) or the ``load`` event
    (load)."""
    target = json.dumps(request.query.get("to", "/hist/private/secret"))
    script = _LEAVES[request.query.get("how", "href")].format(to=target)
    return html_response("Leave", f'<p id="here">here</p><script>{script}</script>')


@routes.get("/hist/private/{name}")
async def private(request: web.Request) -> web.Response:
    return html_response("Private", f'<p id="private">{request.match_info["name"]}</p>')
