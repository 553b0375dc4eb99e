"""``/act/*``: pages for the page actions (issue 18 item 4). Each page records
what it saw and sends it to the site when told (``report()``, run by an
``evaluate`` action: it resolves once the site has stored it), so tests assert
what the site was told, not what the browser returned.

- ``POST /act/report?key=K``: stores the JSON body under ``K`` (in order);
  ``GET /act/reports?key=K``: the list stored under ``K``.
- ``/act/input?key=K``: a button, a hover target, a text input, a select and
  a multiple select, a checkbox and two radio buttons; every mouse, key,
  input and change event is recorded as ``[type, target id, isTrusted,
  key, value]`` (for a mouse event, ``key`` is "button,detail,ctrlKey,shiftKey,
  offsetX,offsetY").
- ``/act/wait?key=K``: ``#go`` starts, 300 ms after its click, a ``fetch``
  of ``/act/data?key=K&call=N`` (N: 1, 2... per click), then sets
  ``window.ready``, counts it in ``window.done`` and pushes
  ``/act/wait/pushed?key=K`` into the history; ``#leave`` navigates to
  ``/act/next?key=K`` 300 ms after its click.
- ``/act/next?key=K``: stores ``{"next": Referer}`` under ``K`` when served.
- ``/act/feed?key=K``: an infinite feed: 10 ``.card`` elements, 10 more
  fetched from ``/act/feed-page?key=K&page=N`` each time its sentinel comes
  into view, 6 pages in all (60 cards); each page served is stored under ``K``.
- ``/act/form?key=K``: a GET form to ``/act/next`` with ``input#q``
  (``name=q``) and a hidden ``key``.
- ``/act/covered``: ``button#under`` under ``div#overlay`` (absolutely
  positioned over it), and ``button#hidden`` with ``display: none``.
- ``/act/misplaced?key=K``: ``i#target`` (inline, ``width: 300px``) inside
  a first ``div``, then ``div#next``: at the centre Lightpanda 1.0.2 gives
  ``i#target`` its hit test finds ``div#next`` (Chromium: the target itself).
  Mouse events are recorded as on ``/act/input``.
- ``/act/shot``: ``#box``, 200x100 CSS pixels, ``rgb(0, 128, 255)``, at
  (40, 60), on white.
"""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from typing import Any

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()
REPORTS = web.AppKey("action_reports", defaultdict)

FEED_PAGES = 6
FEED_PAGE_SIZE = 10
SHOT_BOX = (40, 60, 200, 100)  # x, y, width, height
SHOT_COLOUR = (0, 128, 255)

_REPORT = """<script>
window.seen = [];
window.report = function (data) {
  return fetch("/act/report?key=" + encodeURIComponent(KEY), {method: "POST",
    body: JSON.stringify(data === undefined ? window.seen : data)}).then(r => r.text());
};
</script>"""


def _report_script(key: str) -> str:
    return _REPORT.replace("KEY", json.dumps(key))


@routes.post("/act/report")
async def report(request: web.Request) -> web.Response:
    request.app[REPORTS][request.query.get("key", "")].append(json.loads(await request.read()))
    return web.Response(text="stored")


@routes.get("/act/reports")
async def reports(request: web.Request) -> web.Response:
    return web.json_response(request.app[REPORTS][request.query.get("key", "")])


INPUT = """<button id="btn" style="width:120px;height:40px">button</button>
<div id="hov" style="width:120px;height:40px;background:#eee">hover me</div>
<input id="txt" style="width:200px">
<select id="sel"><option value="a">Apple</option><option value="b">Banana</option>
<option value="c">Cherry</option></select>
<select id="multi" multiple><option value="x">Ex</option><option value="y">Why</option>
<option value="z">Zed</option></select>
<input type="checkbox" id="cb">
<input type="radio" name="r" id="r1" value="1"><input type="radio" name="r" id="r2" value="2">
<script>
for (const t of ["click", "mousedown", "mouseup", "mouseover", "mouseenter", "mousemove",
                 "keydown", "keyup", "input", "change", "dblclick", "contextmenu", "auxclick"])
  document.addEventListener(t, function (e) {
    const el = e.target;
    // a mouse event's button, detail (click count), Control and Shift held, offset
    const mouse = e instanceof MouseEvent ? [e.button, e.detail, e.ctrlKey, e.shiftKey,
      Math.round(e.offsetX), Math.round(e.offsetY)].join() : "";
    window.seen.push([e.type, el.id || el.nodeName, e.isTrusted, e.key || mouse,
      el.type === "checkbox" || el.type === "radio" ? el.checked
        : el.multiple ? Array.from(el.selectedOptions).map(o => o.value)
        : el.value === undefined ? "" : String(el.value)]);
  }, true);
</script>"""


@routes.get("/act/input")
async def input_page(request: web.Request) -> web.Response:
    return html_response("Input", _report_script(request.query.get("key", "")) + INPUT)


WAIT = """<button id="go">go</button> <button id="leave">leave</button>
<script>
var calls = 0;
document.getElementById("go").addEventListener("click", function () {
  setTimeout(function () {
    calls++;
    fetch("/act/data?key=" + encodeURIComponent(KEY) + "&call=" + calls)
      .then(r => r.json()).then(function (d) {
      window.ready = d; window.done = (window.done || 0) + 1;
      history.pushState({}, "", "/act/wait/pushed?key=" + encodeURIComponent(KEY));
    });
  }, 300);
});
document.getElementById("leave").addEventListener("click", function () {
  setTimeout(function () { location.href = "/act/next?key=" + encodeURIComponent(KEY); }, 300);
});
</script>"""


@routes.get("/act/wait")
async def wait_page(request: web.Request) -> web.Response:
    key = request.query.get("key", "")
    return html_response("Wait", _report_script(key) + WAIT.replace("KEY", json.dumps(key)))


@routes.get("/act/data")
async def data(request: web.Request) -> web.Response:
    return web.json_response({"key": request.query.get("key", ""), "n": 7})


@routes.get("/act/next")
async def next_page(request: web.Request) -> web.Response:
    key = request.query.get("key", "")
    request.app[REPORTS][key].append({"next": request.headers.get("Referer")})
    return html_response("Next", '<p id="next">next</p>')


FEED = """<div id="cards"></div><p id="sentinel">more</p>
<script>
var cards = document.getElementById("cards"), page = 0, loading = false;
function more() {
  if (loading || page >= PAGES) return;
  loading = true; page++;
  fetch("/act/feed-page?key=" + encodeURIComponent(KEY) + "&page=" + page)
    .then(r => r.json()).then(function (items) {
      for (const text of items) {
        var c = document.createElement("div"); c.className = "card";
        c.style.height = "300px"; c.textContent = text; cards.appendChild(c);
      }
      loading = false;
    });
}
new IntersectionObserver(function (entries) {
  if (entries.some(e => e.isIntersecting)) more();
}).observe(document.getElementById("sentinel"));
</script>"""


@routes.get("/act/feed")
async def feed(request: web.Request) -> web.Response:
    key = request.query.get("key", "")
    script = FEED.replace("KEY", json.dumps(key)).replace("PAGES", str(FEED_PAGES))
    return html_response("Feed", script)


@routes.get("/act/feed-page")
async def feed_page(request: web.Request) -> web.Response:
    page = int_query(request, "page", 1, 1, FEED_PAGES)
    request.app[REPORTS][request.query.get("key", "")].append({"feed_page": page})
    items: list[Any] = [
        f"card-{(page - 1) * FEED_PAGE_SIZE + i + 1}" for i in range(FEED_PAGE_SIZE)
    ]
    return web.json_response(items)


LAZY_IMAGES = """<div id="images">%s</div>
<script>
var lazy = new IntersectionObserver(function (entries) {
  for (const e of entries) {
    if (e.isIntersecting) { e.target.src = e.target.dataset.src; lazy.unobserve(e.target); }
  }
});
document.querySelectorAll("img.lazy").forEach(img => lazy.observe(img));
</script>"""


@routes.get("/act/lazy-images")
async def lazy_images(request: web.Request) -> web.Response:
    """``n`` images (default 60), 400 px tall, whose ``src`` an
    ``IntersectionObserver`` sets from ``data-src`` once each comes into view
    (a lazy loader): ``img.lazy[src]`` counts those swapped."""
    n = int_query(request, "n", 60, 1, 500)
    images = "".join(
        f'<img class="lazy" data-src="/image.png?i={i}" alt="{i}" '
        'style="display:block;width:100px;height:400px">'
        for i in range(n)
    )
    return html_response("Lazy images", LAZY_IMAGES % images)


@routes.get("/act/form")
async def form(request: web.Request) -> web.Response:
    key = escape(request.query.get("key", ""))
    return html_response(
        "Form",
        f'<form action="/act/next"><input type="hidden" name="key" value="{key}">'
        '<input id="q" name="q"></form>',
    )


@routes.get("/act/leave-guard")
async def leave_guard(request: web.Request) -> web.Response:
    """A page that arms ``beforeunload`` when its button is clicked (a form
    with unsaved input, as many sites do)."""
    return html_response(
        "Leave guard",
        '<button id="arm" onclick="window.addEventListener(\'beforeunload\', '
        "function (e) { e.preventDefault(); e.returnValue = 'unsaved'; }); "
        "document.body.dataset.armed = '1'\">Edit</button>",
    )


@routes.get("/act/covered")
async def covered(request: web.Request) -> web.Response:
    return html_response(
        "Covered",
        '<button id="under" style="width:100px;height:40px">under</button>'
        '<div id="overlay" style="position:absolute;left:0;top:0;width:300px;height:200px">'
        "</div>"
        '<button id="hidden" style="display:none">hidden</button>',
    )


# No text between the two divs: Lightpanda gives each text node a box too.
MISPLACED = """<div id="first"><b>x</b><i id="target" style="width:300px">target</i></div>\
<div id="next"><b>x</b><i>next</i></div>
<script>
for (const t of ["click", "mousedown", "mouseup", "mouseover", "mouseenter", "mousemove"])
  document.addEventListener(t, function (e) {
    window.seen.push([e.type, e.target.id || e.target.nodeName, e.isTrusted]);
  }, true);
</script>"""


@routes.get("/act/misplaced")
async def misplaced(request: web.Request) -> web.Response:
    return html_response("Misplaced", _report_script(request.query.get("key", "")) + MISPLACED)


@routes.get("/act/shot")
async def shot(request: web.Request) -> web.Response:
    x, y, width, height = SHOT_BOX
    r, g, b = SHOT_COLOUR
    style = (
        f"position:absolute;left:{x}px;top:{y}px;width:{width}px;height:{height}px;"
        f"background:rgb({r},{g},{b})"
    )
    body = f'<style>body{{margin:0;background:#fff}}</style><div id="box" style="{style}"></div>'
    return html_response("Shot", body)
