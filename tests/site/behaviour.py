"""Ordinary page behaviours a browser must survive (issue 14): JavaScript
dialogs, state kept in the browser between visits, timers, service workers,
content fetched after ``load``, navigations to other schemes, runaway memory,
infinite scroll.
"""

from __future__ import annotations

import asyncio
import html
import time
from collections import defaultdict

from aiohttp import web

from .common import html_response, int_query, script_json

routes = web.RouteTableDef()

#: per key: when the page sent each /behaviour/tick (its ``t``, ms since the epoch)
TICKS = web.AppKey("ticks", defaultdict)


@routes.get("/behaviour/dialogs")
async def dialogs(request: web.Request) -> web.Response:
    """``alert("x")`` and ``confirm("y")`` inline while loading, then
    ``prompt("z", "d")`` and ``alert("loaded")`` in a load handler.

    ``#confirm`` shows what ``confirm`` returned (``true`` when accepted),
    ``#prompt`` what ``prompt`` returned (``null`` when dismissed), ``#after``
    is written after the inline dialogs.
    """
    return html_response(
        "Dialogs",
        '<p id="confirm"></p><p id="prompt"></p>'
        '<script>alert("x"); document.getElementById("confirm").textContent ='
        ' String(confirm("y"));</script>'
        '<p id="after">after</p>'
        '<script>window.addEventListener("load", function () {'
        ' document.getElementById("prompt").textContent = String(prompt("z", "d"));'
        ' alert("loaded"); });</script>',
    )


@routes.get("/behaviour/visits")
async def visits(request: web.Request) -> web.Response:
    """Counts this browser's visits in ``localStorage``, ``sessionStorage``
    and (asynchronously) Cache Storage and IndexedDB; shows the counts in
    ``#local``, ``#session``, ``#cache``, ``#idb`` and sets ``#done`` last."""
    return html_response(
        "Visits",
        '<p id="local"></p><p id="session"></p><p id="cache"></p><p id="idb"></p>'
        "<script>"
        "var l = Number(localStorage.getItem('n') || 0) + 1; localStorage.setItem('n', l);"
        "document.getElementById('local').textContent = l;"
        "var s = Number(sessionStorage.getItem('n') || 0) + 1; sessionStorage.setItem('n', s);"
        "document.getElementById('session').textContent = s;"
        "function idb() { return new Promise(function (resolve) {"
        " if (!window.indexedDB) return resolve('none');"
        " var open = indexedDB.open('visits', 1);"
        " open.onupgradeneeded = function () { open.result.createObjectStore('v'); };"
        " open.onerror = function () { resolve('error'); };"
        " open.onsuccess = function () { var db = open.result;"
        "  var tx = db.transaction('v', 'readwrite'); var store = tx.objectStore('v');"
        "  var get = store.get('n'); get.onsuccess = function () {"
        "   var n = (get.result || 0) + 1; store.put(n, 'n');"
        "   tx.oncomplete = function () { resolve(String(n)); }; }; }; }); }"
        "async function cache() { if (!window.caches) return 'none';"
        " var c = await caches.open('visits'); var n = (await c.keys()).length + 1;"
        " await c.put('/behaviour/visit-' + n, new Response('x')); return String(n); }"
        "Promise.all([cache(), idb()]).then(function (r) {"
        " document.getElementById('cache').textContent = r[0];"
        " document.getElementById('idb').textContent = r[1];"
        " var d = document.createElement('p'); d.id = 'done'; document.body.appendChild(d); });"
        "</script>",
    )


@routes.get("/behaviour/leaving")
async def leaving(request: web.Request) -> web.Response:
    """Lists in ``#local`` and ``#session`` the keys already in
    ``localStorage`` and ``sessionStorage`` when it loads (``[]`` when
    none), then writes a key in both from its ``unload``, ``pagehide``,
    ``visibilitychange`` and ``freeze`` handlers: what the page writes while
    it leaves, after the request that rendered it ended."""
    return html_response(
        "Leaving",
        '<p id="local"></p><p id="session"></p>'
        "<script>"
        "function keys(s) { try { return JSON.stringify(Object.keys(s).sort()); }"
        " catch (e) { return 'error'; } }"
        "document.getElementById('local').textContent = keys(localStorage);"
        "document.getElementById('session').textContent = keys(sessionStorage);"
        "function w(k) { try { localStorage.setItem(k, '1'); sessionStorage.setItem(k, '1'); }"
        " catch (e) {} }"
        "addEventListener('unload', function () { w('unload'); });"
        "addEventListener('pagehide', function () { w('pagehide'); });"
        "document.addEventListener('visibilitychange', function () {"
        " w('visibility-' + document.visibilityState); });"
        "document.addEventListener('freeze', function () { w('freeze'); });"
        "</script>",
    )


@routes.get("/behaviour/framed")
async def framed(request: web.Request) -> web.Response:
    """A page with an iframe from another site (``localhost`` instead of
    ``127.0.0.1``, same server): ``/behaviour/frame-counter`` with this
    page's query."""
    port = request.url.port
    src = f"http://localhost:{port}/behaviour/frame-counter?{request.query_string}"
    return html_response("Framed", f'<p id="top">top</p><iframe src="{src}"></iframe>')


@routes.get("/behaviour/frame-counter")
async def frame_counter(request: web.Request) -> web.Response:
    """Counts its loads in ``localStorage`` and ``sessionStorage`` and posts
    ``[local, session]`` to ``/act/report?key=K`` before its load event (a
    synchronous request, so before the page that frames it has loaded)."""
    return html_response(
        "Frame counter",
        "<script>"
        "var l = +(localStorage.getItem('n') || 0) + 1; localStorage.setItem('n', l);"
        "var s = +(sessionStorage.getItem('n') || 0) + 1; sessionStorage.setItem('n', s);"
        "var x = new XMLHttpRequest();"
        "x.open('POST', '/act/report?key=' + new URLSearchParams(location.search).get('key'),"
        " false);"
        "x.send(JSON.stringify([l, s]));"
        "</script>",
    )


@routes.get("/behaviour/ticker")
async def ticker(request: web.Request) -> web.Response:
    """A page whose timer hits ``/behaviour/tick?key=`` every 20 ms, for as
    long as it lives."""
    key = script_json(request.query.get("key", ""))
    return html_response(
        "Ticker",
        '<p id="t">ticking</p><script>var key = ' + key + ";"
        "setInterval(function () { fetch('/behaviour/tick?key=' + encodeURIComponent(key)"
        " + '&t=' + Date.now()); }, 20);</script>",
    )


@routes.get("/behaviour/tick")
async def tick(request: web.Request) -> web.Response:
    sent_ms = float(request.query.get("t", "0"))
    request.app[TICKS][request.query.get("key", "")].append(sent_ms)
    return web.Response(text="ok")


@routes.get("/behaviour/ticks-while-idle")
async def ticks_while_idle(request: web.Request) -> web.Response:
    """Wait ``ms`` milliseconds (default 400) and answer how many ticks of
    ``key`` the page sent meanwhile (by the page's clock, the same machine's:
    a tick sent before the wait but served late does not count): the pages of
    a crawl that is idle must not tick."""
    key = request.query.get("key", "")
    ms = int_query(request, "ms", 400, 0, 5000)
    start_ms = time.time() * 1000
    await asyncio.sleep(ms / 1000)
    sent = [t for t in request.app[TICKS][key] if t >= start_ms]
    return web.json_response({"ticks": len(sent)})


WORKER = """self.addEventListener('install', function (e) { self.skipWaiting(); });
self.addEventListener('activate', function (e) { e.waitUntil(self.clients.claim()); });
self.addEventListener('fetch', function (e) {
  if (new URL(e.request.url).pathname === '/behaviour/sw/page') {
    e.respondWith(new Response('<!doctype html><p id="from">worker</p>',
                               {headers: {'Content-Type': 'text/html'}}));
  }
});
"""


@routes.get("/behaviour/sw/page")
async def sw_page(request: web.Request) -> web.Response:
    """``#from`` says ``server``; the page registers a service worker that
    would answer the next visit itself (``#from`` = ``worker``) and sets
    ``#done`` once it controls the scope."""
    return html_response(
        "Service worker",
        '<p id="from">server</p><script>'
        "if (navigator.serviceWorker) {"
        " navigator.serviceWorker.register('/behaviour/sw/worker.js', {scope: '/behaviour/sw/'});"
        " navigator.serviceWorker.ready.then(function () {"
        "  var d = document.createElement('p'); d.id = 'done';"
        "  document.body.appendChild(d); }); }"
        " else { var d = document.createElement('p'); d.id = 'done';"
        " document.body.appendChild(d); }"
        "</script>",
    )


@routes.get("/behaviour/sw/worker.js")
async def sw_worker(request: web.Request) -> web.Response:
    return web.Response(text=WORKER, content_type="application/javascript")


@routes.get("/behaviour/late")
async def late(request: web.Request) -> web.Response:
    """A list filled by ``fetch('/behaviour/late-data')`` 50 ms after the
    load event; the data answers after ``ms`` milliseconds (default 300)."""
    ms = int_query(request, "ms", 300, 0, 5000)
    return html_response(
        "Late content",
        '<ul id="list"></ul><script>window.addEventListener("load", function () {'
        " setTimeout(function () { fetch('/behaviour/late-data?ms=" + str(ms) + "')"
        " .then(function (r) { return r.json(); }).then(function (items) {"
        "  var list = document.getElementById('list');"
        "  items.forEach(function (t) { var li = document.createElement('li');"
        "   li.className = 'late'; li.textContent = t; list.appendChild(li); }); }); }, 50);"
        "});</script>",
    )


@routes.get("/behaviour/late-data")
async def late_data(request: web.Request) -> web.Response:
    await asyncio.sleep(int_query(request, "ms", 300, 0, 5000) / 1000)
    return web.json_response([f"late-{i}" for i in range(1, 6)])


@routes.get("/behaviour/scheme")
async def scheme(request: web.Request) -> web.Response:
    """Shows ``#here`` then sets ``window.location`` to ``to`` (any URL,
    e.g. ``mailto:a@b``, ``myapp://open``, ``file:///etc/hostname``) once
    loaded (``when=load``, default), inline (``when=inline``) or by a meta
    refresh of 0 s (``when=meta``)."""
    to = script_json(request.query.get("to", "mailto:a@example.com"))
    go = "window.location.href = " + to + ";"
    if request.query.get("when") == "meta":
        refresh = html.escape("0;url=" + request.query.get("to", "mailto:a@example.com"))
        return html_response(
            "Scheme", f'<meta http-equiv="refresh" content="{refresh}"><p id="here">here</p>'
        )
    if request.query.get("when") == "inline":
        script = go
    else:
        script = 'window.addEventListener("load", function () { ' + go + " });"
    return html_response("Scheme", '<p id="here">here</p><script>' + script + "</script>")


@routes.get("/behaviour/memory-hog")
async def memory_hog(request: web.Request) -> web.Response:
    """Allocates memory without end once loaded (arrays kept alive)."""
    return html_response(
        "Memory hog",
        '<p id="hog">hog</p><script>window.addEventListener("load", function () {'
        " var keep = []; while (true) { keep.push(new Array(1 << 20).fill(Math.random())); }"
        " });</script>",
    )


@routes.get("/behaviour/infinite-scroll")
async def infinite_scroll(request: web.Request) -> web.Response:
    """5 ``.card`` elements; 5 more each time the page is scrolled to its
    bottom (an ``IntersectionObserver`` on a sentinel), up to 15."""
    return html_response(
        "Infinite scroll",
        '<div id="cards"></div><div id="sentinel" style="height:1px"></div><script>'
        "var cards = document.getElementById('cards'); var n = 0;"
        "function more() { for (var i = 0; i < 5 && n < 15; i++) { n++;"
        " var c = document.createElement('div'); c.className = 'card';"
        " c.style.height = '400px'; c.textContent = 'card-' + n; cards.appendChild(c); } }"
        "more();"
        "new IntersectionObserver(function (entries) {"
        " if (entries.some(function (e) { return e.isIntersecting; })) more(); })"
        ".observe(document.getElementById('sentinel'));"
        "</script>",
    )
