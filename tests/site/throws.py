"""``/throws?chars=N``: a page whose ``window.throwLong()`` throws an ``Error``
whose message is ``N`` (default 204800, at most 1,000,000) ``x`` characters,
for the bounded-message tests (issue 12). The page itself renders normally;
the error comes when an action calls the function."""

from __future__ import annotations

from aiohttp import web

from .common import html_response, int_query

routes = web.RouteTableDef()

SCRIPT = """<p id="ready">ready</p>
<script>
window.throwLong = function () { throw new Error("x".repeat(%d)); };
</script>"""


@routes.get("/throws")
async def throws(request: web.Request) -> web.Response:
    chars = int_query(request, "chars", 204800, 0, 1_000_000)
    return html_response("Throws", SCRIPT % chars)
