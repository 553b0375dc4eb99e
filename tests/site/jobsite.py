"""A site of a few hundred JavaScript-rendered pages for pause-and-resume crawls.

``/jobsite/<n>?tag=T&total=N&hubs=H`` (n = 0..N-1): page 0 links to the hubs
1..H; hub h links to its share of the leaves H+1..N-1 (a burst of new requests);
every page but 0 also links back to page 0 and to its hub (duplicates for the
dupefilter). Links are made by inline JavaScript from inline JSON, so a crawler
without a browser sees none. Each page shows ``<h1 id="n">``, the ``session``
cookie it was sent (``<p id="session">``, ``-`` for none) and ``<p id="js">``
(2n, written by the script). A request with a session is held ``ms``
milliseconds (default 20; ``ms`` is kept in the page's links) and counted in
``/stats`` ``inflight_max`` under ``jobsite:<tag>:<session>``.

``/jobsite/fetches?tag=T``: how many times each page of ``tag`` was fetched,
``{"<n>": count}`` (from the hit counters of ``/stats``).
"""

from __future__ import annotations

import asyncio
from html import escape
from urllib.parse import parse_qs, urlsplit

from aiohttp import web

from .common import html_response, int_query, park, script_json
from .protocol import parse_cookie_header
from .stats import STATS

routes = web.RouteTableDef()

PAGE_SCRIPT = """<div id="links"></div>
<script>
(function () {
  var data = %s;
  document.getElementById("js").textContent = String(data.n * 2);
  var box = document.getElementById("links");
  data.links.forEach(function (href) {
    var link = document.createElement("a");
    link.className = "page";
    link.setAttribute("href", href);
    link.textContent = href;
    box.appendChild(link);
  });
  document.body.dataset.rendered = "yes";
})();
</script>"""


def page_url(n: int, tag: str, total: int, hubs: int, ms: str = "") -> str:
    held = f"&ms={ms}" if ms else ""
    return f"/jobsite/{n}?tag={tag}&total={total}&hubs={hubs}{held}"


def hub_of(n: int, hubs: int) -> int:
    """The hub a leaf ``n`` hangs from (0 for the hubs themselves)."""
    return (n - hubs - 1) % hubs + 1 if n > hubs else 0


def links_of(n: int, total: int, hubs: int) -> list[int]:
    if n == 0:
        return list(range(1, hubs + 1))
    if n <= hubs:
        return [0] + [leaf for leaf in range(hubs + 1, total) if hub_of(leaf, hubs) == n]
    return [0, hub_of(n, hubs)]


@routes.get(r"/jobsite/{n:\d+}")
async def page(request: web.Request) -> web.Response:
    tag = request.query.get("tag", "")
    total = int_query(request, "total", 300, 1, 5000)
    hubs = int_query(request, "hubs", 5, 1, 100)
    n = int(request.match_info["n"])
    if n >= total:
        raise web.HTTPNotFound(text=f"page {n} of {total}")
    session = parse_cookie_header(request.headers.get("Cookie", "")).get("session", "")
    if session:
        key = f"jobsite:{tag}:{session}"
        records = request.app[STATS]
        records.enter(key)
        try:
            await park(request, asyncio.sleep(int_query(request, "ms", 20, 0, 1000) / 1000))
        finally:
            records.leave(key)
    ms = request.query.get("ms", "")  # kept in the links: every page held as long
    links = [page_url(link, tag, total, hubs, ms) for link in links_of(n, total, hubs)]
    body = (
        f'<h1 id="n">{n}</h1>\n<p id="session">{escape(session or "-")}</p>\n<p id="js"></p>\n'
        + PAGE_SCRIPT % script_json({"n": n, "links": links})
    )
    return html_response(f"Page {n}", body)


@routes.get("/jobsite/fetches")
async def fetches(request: web.Request) -> web.Response:
    tag = request.query.get("tag", "")
    counts: dict[str, int] = {}
    for path_qs, hits in request.app[STATS].hits_by_url.items():
        parts = urlsplit(path_qs)
        if parts.path.startswith("/jobsite/") and parse_qs(parts.query).get("tag") == [tag]:
            n = parts.path.rsplit("/", 1)[1]
            if n.isdigit():
                counts[n] = counts.get(n, 0) + hits
    return web.json_response(counts)
