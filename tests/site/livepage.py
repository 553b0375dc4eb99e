"""``/live/*``: pages a spider drives through its live page
(``meta["cdp_include_page"]``, issue 18 item 2).

- ``/live/button?key=K``: a page whose button ``#go``, when clicked, POSTs
  ``K`` to ``/live/record`` and writes the answer into ``#out``; it sets the
  cookie ``who=K`` (so a context's cookies tell whose it is).
- ``/live/record`` (POST): records the body; answers ``recorded <body>``.
- ``/live/records``: the bodies recorded, in order, as JSON.
"""

from __future__ import annotations

import json

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()
RECORDS = web.AppKey("live_records", list)

BUTTON = """<p id="key"></p><button id="go">go</button><p id="out"></p>
<script>
document.cookie = "who=" + KEY + "; path=/";
document.getElementById("key").textContent = KEY;
document.getElementById("go").addEventListener("click", function () {
  fetch("/live/record", {method: "POST", body: KEY})
    .then(function (r) { return r.text(); })
    .then(function (text) { document.getElementById("out").textContent = text; });
});
</script>"""


@routes.get("/live/button")
async def button(request: web.Request) -> web.Response:
    key = request.query.get("key", "k")
    return html_response("live " + key, BUTTON.replace("KEY", json.dumps(key)))


@routes.post("/live/record")
async def record(request: web.Request) -> web.Response:
    body = (await request.read()).decode("utf-8", "replace")
    request.app[RECORDS].append(body)
    return web.Response(text=f"recorded {body}")


@routes.get("/live/records")
async def records(request: web.Request) -> web.Response:
    return web.json_response(request.app[RECORDS])
