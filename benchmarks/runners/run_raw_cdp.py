"""The floor: a minimal asyncio CDP loop, no Playwright, one websocket per connection.

``--mode fresh`` (default), per page, on one connection: Target.createBrowserContext,
Target.createTarget(about:blank), Target.attachToTarget(flatten), Page.enable, Page.navigate,
wait Page.loadEventFired, Runtime.evaluate(outerHTML), Target.closeTarget,
Target.disposeBrowserContext.

``--mode kept``: one page per connection, opened once (the same commands) and navigated again
for every page: Page.navigate, wait Page.loadEventFired, Runtime.evaluate(outerHTML). The floor
of a browser whose cost is a new renderer per context (Chromium).
"""

from __future__ import annotations

import asyncio
import collections
import json
import urllib.request

import websockets
from _common import PAGE_TIMEOUT_S, Tally, emit, page_urls, parser, warmup_url

OUTER_HTML = "document.documentElement.outerHTML"


class CDPError(RuntimeError):
    pass


class Connection:
    """One websocket: commands matched to replies by id, events to waiters by session."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0
        self.replies: dict[int, asyncio.Future] = {}
        self.waiters: dict[tuple[str | None, str], asyncio.Future] = {}
        self.reader = asyncio.create_task(self._read(), name="cdp-reader")

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                msg = json.loads(raw)
                if "id" in msg:
                    fut = self.replies.pop(msg["id"], None)
                    if fut is not None and not fut.done():
                        if "error" in msg:
                            fut.set_exception(CDPError(str(msg["error"])))
                        else:
                            fut.set_result(msg.get("result", {}))
                else:
                    fut = self.waiters.pop((msg.get("sessionId"), msg.get("method")), None)
                    if fut is not None and not fut.done():
                        fut.set_result(msg.get("params", {}))
        finally:
            for fut in [*self.replies.values(), *self.waiters.values()]:
                if not fut.done():
                    fut.set_exception(CDPError("connection closed"))

    async def send(
        self, method: str, params: dict | None = None, session: str | None = None
    ) -> dict:
        self.next_id += 1
        msg: dict = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        fut = asyncio.get_running_loop().create_future()
        self.replies[self.next_id] = fut
        await self.ws.send(json.dumps(msg))
        return await asyncio.wait_for(fut, PAGE_TIMEOUT_S)

    def event(self, method: str, session: str | None) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self.waiters[(session, method)] = fut
        return fut

    async def render(self, url: str) -> str:
        ctx = (await self.send("Target.createBrowserContext"))["browserContextId"]
        try:
            target = (
                await self.send(
                    "Target.createTarget", {"url": "about:blank", "browserContextId": ctx}
                )
            )["targetId"]
            try:
                sid = (
                    await self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
                )["sessionId"]
                await self.send("Page.enable", session=sid)
                return await self.render_kept(sid, url)
            finally:
                await self.send("Target.closeTarget", {"targetId": target})
        finally:
            await self.send("Target.disposeBrowserContext", {"browserContextId": ctx})

    async def open_kept(self) -> str:
        """A page kept for every render of this connection: its session id."""
        ctx = (await self.send("Target.createBrowserContext"))["browserContextId"]
        target = (
            await self.send("Target.createTarget", {"url": "about:blank", "browserContextId": ctx})
        )["targetId"]
        sid = (await self.send("Target.attachToTarget", {"targetId": target, "flatten": True}))[
            "sessionId"
        ]
        await self.send("Page.enable", session=sid)
        return sid

    async def render_kept(self, sid: str, url: str) -> str:
        """Navigate the page of session ``sid`` to ``url``, wait for its load
        event and read its DOM (the floor's per-page work, either mode)."""
        loaded = self.event("Page.loadEventFired", sid)
        nav = await self.send("Page.navigate", {"url": url}, session=sid)
        if nav.get("errorText"):
            raise CDPError("navigate: %s" % nav["errorText"])
        await asyncio.wait_for(loaded, PAGE_TIMEOUT_S)
        res = await self.send(
            "Runtime.evaluate", {"expression": OUTER_HTML, "returnByValue": True}, session=sid
        )
        return res["result"]["value"]

    async def close(self) -> None:
        await self.ws.close()
        await asyncio.wait_for(self.reader, 5)


def browser_ws_url(endpoint: str) -> str:
    with urllib.request.urlopen(endpoint.rstrip("/") + "/json/version", timeout=10) as r:
        return json.loads(r.read())["webSocketDebuggerUrl"]


async def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--mode", choices=("fresh", "kept"), default="fresh")
    args = ap.parse_args()
    ws_url = browser_ws_url(args.endpoint)
    conns = [
        Connection(
            await websockets.connect(
                ws_url, max_size=None, compression=None, ping_interval=None, open_timeout=10
            )
        )
        for _ in range(args.concurrency)
    ]
    tally = Tally(args.kind, args.pages, args.progress_every)
    try:
        warm = warmup_url(args.base_url, args.kind, args.pages, args.first_page)
        sessions: dict[Connection, str] = {}
        if args.mode == "kept":
            for conn in conns:
                sessions[conn] = await conn.open_kept()
                await conn.render_kept(sessions[conn], warm)
        else:
            await conns[0].render(warm)
        queue = collections.deque(page_urls(args.base_url, args.kind, args.pages, args.first_page))
        tally.start()

        async def worker(conn: Connection) -> None:
            while queue:
                url = queue.popleft()
                try:
                    if args.mode == "kept":
                        tally.page(await conn.render_kept(sessions[conn], url))
                    else:
                        tally.page(await conn.render(url))
                except (TimeoutError, CDPError, websockets.ConnectionClosed) as e:
                    tally.error("%s: %s" % (type(e).__name__, e))

        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        tally.result()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # report, then fail: the harness reads the error line
        emit("error", message="%s: %s" % (type(e).__name__, e))
        raise
