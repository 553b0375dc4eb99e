"""Pages for the render ladder (issue 17): the same list of three items,
``<li class="item"><kind>-<n>-<i></li>``, delivered three ways.

- ``/ladder/static/<n>``: in the HTML (plain HTTP gets it).
- ``/ladder/script/<n>``: built by an inline script (Lightpanda runs it).
- ``/ladder/canvas/<n>``: built only when a 2D canvas the script draws on
  reads back what was drawn (``getImageData`` after ``fillRect``). Lightpanda
  1.0.2 paints nothing on a canvas (every pixel reads 0, 0, 0, 0: checked
  against the real binary), so the list appears on Chromium only. (Pages that
  read their drawing back: charts turned into images, canvas checks of
  anti-bot scripts.)
- ``/ladder/switch/<n>``: like ``script`` until ``/ladder/switch-mode?to=static``,
  then like ``static`` (a kind of page that became simpler).
- ``/ladder/empty/<n>``: never has the list; ``?ms=`` answers after that
  many milliseconds (a slow page, for the ladder's shared deadline).

Every page but ``empty`` loads ``/ladder/beacon.js?kind=<kind>`` (never
cached): a browser fetches it, plain HTTP does not, so the site's hits on it
count the pages a browser rendered, per kind.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from .common import html_response, int_query, park

routes = web.RouteTableDef()

ITEMS = 3
SWITCHED = web.AppKey("ladder_switched", dict)


def item_texts(kind: str, n: int) -> list[str]:
    """What a page's list holds (for the tests' and benchmark's checks)."""
    return [f"{kind}-{n}-{i}" for i in range(ITEMS)]


def mixed_kind(i: int) -> str:
    """The kind of page ``i`` of a 70/20/10 mix: static for i % 10 < 7,
    script for 7 and 8, canvas for 9 (interleaved)."""
    slot = i % 10
    return "static" if slot < 7 else "script" if slot < 9 else "canvas"


def _beacon(kind: str) -> str:
    return f'<script src="/ladder/beacon.js?kind={kind}"></script>'


def _static(kind: str, n: int) -> web.Response:
    items = "".join(f'<li class="item">{t}</li>' for t in item_texts(kind, n))
    return html_response(f"{kind} {n}", f'<ul id="items">{items}</ul>{_beacon(kind)}')


def _scripted(kind: str, n: int, guard: str = "true") -> web.Response:
    texts = ",".join(f'"{t}"' for t in item_texts(kind, n))
    script = f"""<script>
var list = document.getElementById("items");
if ({guard}) {{
  [{texts}].forEach(function (text) {{
    var li = document.createElement("li"); li.className = "item"; li.textContent = text;
    list.appendChild(li);
  }});
}}
</script>"""
    return html_response(f"{kind} {n}", f'<ul id="items"></ul>{_beacon(kind)}{script}')


_CANVAS_DRAWS = """(function () {
  var canvas = document.createElement("canvas"); canvas.width = 4; canvas.height = 4;
  var context = canvas.getContext("2d");
  if (!context) return false;
  context.fillStyle = "#ff0000"; context.fillRect(0, 0, 4, 4);
  var pixel = context.getImageData(1, 1, 1, 1).data;
  return pixel[0] === 255 && pixel[3] === 255;
})()"""


@routes.get("/ladder/beacon.js")
async def beacon(request: web.Request) -> web.Response:
    return web.Response(
        text="/* counted */", content_type="application/javascript",
        headers={"Cache-Control": "no-store"},
    )  # fmt: skip


@routes.get("/ladder/static/{n:\\d+}")
async def static(request: web.Request) -> web.Response:
    return _static("static", int(request.match_info["n"]))


@routes.get("/ladder/script/{n:\\d+}")
async def script(request: web.Request) -> web.Response:
    return _scripted("script", int(request.match_info["n"]))


@routes.get("/ladder/canvas/{n:\\d+}")
async def canvas(request: web.Request) -> web.Response:
    return _scripted("canvas", int(request.match_info["n"]), _CANVAS_DRAWS)


@routes.get("/ladder/switch/{n:\\d+}")
async def switch(request: web.Request) -> web.Response:
    n = int(request.match_info["n"])
    if request.app[SWITCHED].get("static"):
        return _static("switch", n)
    return _scripted("switch", n)


@routes.get("/ladder/switch-mode")
async def switch_mode(request: web.Request) -> web.Response:
    """``?to=static`` or ``?to=script``: how ``/ladder/switch/<n>`` serves."""
    request.app[SWITCHED]["static"] = request.query.get("to") == "static"
    return web.json_response({"static": request.app[SWITCHED]["static"]})


@routes.get("/ladder/empty/{n:\\d+}")
async def empty(request: web.Request) -> web.Response:
    ms = int_query(request, "ms", 0, 0, 60_000)
    if ms:
        await park(request, asyncio.sleep(ms / 1000))
    return html_response("empty", '<ul id="items"></ul>')
