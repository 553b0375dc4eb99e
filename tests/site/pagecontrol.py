"""``/pc/*``: pages for network capture, init scripts, URL blocking and console
messages (issue 18).

- ``/pc/spa?key=K``: after its load event the page fetches ``/pc/api?key=K``
  (JSON, ``fetch``) and POSTs ``a=1&b=%C3%A9`` to ``/pc/echo-post`` (XHR),
  writes both answers into the DOM and then adds ``<p id="done">``.
- ``/pc/api?key=K``: a fixed JSON document with non-ASCII text
  (:func:`api_body` gives its exact bytes).
- ``/pc/echo-post``: answers the POST's body back, as ``text/plain``.
- ``/pc/big?kb=N``: ``N`` KiB of JSON (at most 8192), fetched by ``/pc/spa-big``.
"""

from __future__ import annotations

import json

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()


def api_body(key: str) -> bytes:
    """The exact bytes ``/pc/api?key=<key>`` answers."""
    return json.dumps(
        {"key": key, "items": [1, 2, 3], "text": "café ✓"}, ensure_ascii=False
    ).encode("utf-8")


SPA = """<p id="status">loading</p><div id="out"></div><div id="echo"></div>
<script>
window.addEventListener("load", function () {
  var api = fetch("/pc/api?key=" + encodeURIComponent(KEY))
    .then(function (r) { return r.json(); })
    .then(function (data) { document.getElementById("out").textContent = data.key; });
  var post = new Promise(function (resolve) {
    var xhr = new XMLHttpRequest();
    xhr.open("POST", "/pc/echo-post");
    xhr.setRequestHeader("Content-Type", "application/x-www-form-urlencoded");
    xhr.onload = function () {
      document.getElementById("echo").textContent = xhr.responseText; resolve();
    };
    xhr.send("a=1&b=%C3%A9");
  });
  Promise.all([api, post]).then(function () {
    var done = document.createElement("p"); done.id = "done"; done.textContent = "done";
    document.body.appendChild(done);
  });
});
</script>"""


@routes.get("/pc/spa")
async def spa(request: web.Request) -> web.Response:
    key = request.query.get("key", "k")
    return html_response("SPA", SPA.replace("KEY", json.dumps(key)))


@routes.get("/pc/api")
async def api(request: web.Request) -> web.Response:
    return web.Response(
        body=api_body(request.query.get("key", "k")), content_type="application/json"
    )


@routes.post("/pc/echo-post")
async def echo_post(request: web.Request) -> web.Response:
    return web.Response(body=await request.read(), content_type="text/plain")


BIG = """<script>
window.addEventListener("load", function () {
  fetch("/pc/big?kb=KB").then(function (r) { return r.text(); }).then(function (t) {
    var done = document.createElement("p"); done.id = "done"; done.textContent = t.length;
    document.body.appendChild(done);
  });
});
</script>"""


@routes.get("/pc/spa-big")
async def spa_big(request: web.Request) -> web.Response:
    kb = int_query(request, "kb", 64, 1, 8192)
    return html_response("SPA big", BIG.replace("KB", str(kb)))


@routes.get("/pc/big")
async def big(request: web.Request) -> web.Response:
    kb = int_query(request, "kb", 64, 1, 8192)
    payload = json.dumps({"data": "x" * (kb * 1024 - 12)})
    return web.Response(text=payload, content_type="application/json")


INIT = """<p id="seen"></p><p id="frames"></p>
<script>
document.getElementById("seen").textContent = JSON.stringify(
  [typeof window.__injected === "undefined" ? null : window.__injected,
   typeof window.__second === "undefined" ? null : window.__second]);
</script>"""


@routes.get("/pc/init")
async def init(request: web.Request) -> web.Response:
    """Writes what init scripts left in ``window.__injected`` and
    ``window.__second`` (``null`` for none) into ``#seen``, as JSON, from its
    own inline script."""
    return html_response("Init", INIT)


BLOCK = """<p id="tracker"></p><p id="beacon"></p>
<script src="/pc/tracker.js?key=KEY"></script>
<script>
document.getElementById("tracker").textContent = window.__tracker || "none";
window.addEventListener("load", function () {
  var beacon = fetch("/pc/beacon?key=KEY").then(
    function () { return "sent"; }, function () { return "failed"; });
  var api = fetch("/pc/api?key=KEY").then(function (r) { return r.text(); });
  Promise.all([beacon, api]).then(function (values) {
    document.getElementById("beacon").textContent = values[0];
    var done = document.createElement("p"); done.id = "done"; done.textContent = "done";
    document.body.appendChild(done);
  });
});
</script>"""


@routes.get("/pc/block")
async def block(request: web.Request) -> web.Response:
    """Loads ``/pc/tracker.js?key=K`` (a script setting ``window.__tracker``),
    then after load fetches ``/pc/beacon?key=K`` and ``/pc/api?key=K``; shows
    what the tracker set (``none`` without it) and whether the beacon was
    ``sent`` or ``failed``, then adds ``#done``. The site counts each hit."""
    key = request.query.get("key", "k")
    return html_response("Block", BLOCK.replace("KEY", key.replace('"', "")))


@routes.get("/pc/tracker.js")
async def tracker(request: web.Request) -> web.Response:
    return web.Response(text="window.__tracker = 'loaded';", content_type="text/javascript")


@routes.get("/pc/beacon")
async def beacon(request: web.Request) -> web.Response:
    return web.Response(text="ok", content_type="text/plain")


CONSOLE = """<script>
console.log("hello", 42, true, null);
console.warn("careful");
console.error("x".repeat(5000));
for (var i = 0; i < EXTRA; i++) { console.log("extra " + i); }
</script>
<script>throw new Error("boom from the page");</script>
<p id="done">done</p>"""


@routes.get("/pc/console")
async def console(request: web.Request) -> web.Response:
    """Logs ``hello 42 true null`` (log), ``careful`` (warn), 5,000 ``x``
    (error), then ``extra 0`` ... ``extra N-1`` (``n``, default 0), then a
    script throws ``Error: boom from the page``, uncaught."""
    extra = int_query(request, "n", 0, 0, 10_000)
    return html_response("Console", CONSOLE.replace("EXTRA", str(extra)))
