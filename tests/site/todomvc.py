"""``/todomvc/<app>/``: built TodoMVC apps (tastejs/todomvc, MIT licence)
served as static files, same-origin with the rest of the site, for the
TodoMVC matrix (tests/todomvc_matrix.py). What is vendored and from which
commit: tests/site/todomvc/README.md."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

#: the vendored apps' directory: one folder per app, each its ``dist/``
ROOT = Path(__file__).parent / "todomvc"
#: the apps vendored, by folder name
APPS = ("javascript-es6", "jquery", "react", "vue", "lit", "web-components")

routes = web.RouteTableDef()


@routes.get("/todomvc/{app}/{path:.*}")
async def todomvc_file(request: web.Request) -> web.StreamResponse:
    """One file of one app (``index.html`` for the app's folder itself);
    404 for anything outside the app's folder or not there."""
    app = request.match_info["app"]
    if app not in APPS:
        raise web.HTTPNotFound()
    base = (ROOT / app).resolve()
    target = (base / (request.match_info["path"] or "index.html")).resolve()
    if not target.is_relative_to(base) or not target.is_file():
        raise web.HTTPNotFound()
    return web.FileResponse(target)
