"""What a fresh browser context per page costs Lightpanda against one page
navigated on (not run by the tests).

    python benchmarks/lightpanda_reuse.py [--kinds products,spa] [--pages 20] [--blocks 4]

Raw CDP over Lightpanda's WebSocket (a server of the benchmark harness,
``procs.start_lightpanda``), the benchmark site started and warmed here. Two
connections (Lightpanda allows one browser context per connection):

- ``fresh``: per page, ``Target.createBrowserContext``, ``createTarget``,
  ``attachToTarget``, ``Page.enable``, navigate, wait for the load event, read
  the DOM, ``disposeBrowserContext`` (what the plugin does);
- ``reuse``: one page kept for the whole run, navigated to each URL in turn,
  load event, DOM read.

Blocks of ``--pages`` pages alternate between the two, so the machine's other
load falls on both alike; printed: Lightpanda's CPU (user + system) per page
and wall time per page, per block and as medians. It answers whether keeping
Lightpanda pages (as the plugin keeps Chromium pages) would save server CPU:
on ``/spa`` it would if Lightpanda kept compiled scripts in a page across
navigations.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import websockets
from procs import start_benchsite, start_lightpanda, stop, warm_benchsite

SITE = Path(__file__).resolve().parents[2] / "shared" / "benchsite" / "server.py"
PAGE_URL = {"products": "/products?page=%d", "spa": "/spa?id=%d"}
DOM_READ = "document.documentElement.outerHTML.length"


class Connection:
    def __init__(self, ws: Any) -> None:
        self.ws, self.next_id = ws, 0
        self.replies: dict[int, asyncio.Future[Any]] = {}
        self.events: dict[tuple[str | None, str], asyncio.Future[Any]] = {}
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if "id" in message:
                future = self.replies.pop(message["id"])
                if "error" in message:
                    future.set_exception(RuntimeError(message["error"]))
                else:
                    future.set_result(message.get("result", {}))
            else:
                waiter = self.events.pop((message.get("sessionId"), message["method"]), None)
                if waiter is not None:
                    waiter.set_result(message.get("params", {}))

    async def send(self, method: str, params: dict | None = None, session: str | None = None):
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.replies[self.next_id] = future
        await self.ws.send(json.dumps(message))
        return await asyncio.wait_for(future, 60)

    async def open_page(self) -> tuple[str, str]:
        context = (await self.send("Target.createBrowserContext"))["browserContextId"]
        target = await self.send(
            "Target.createTarget", {"url": "about:blank", "browserContextId": context}
        )
        attached = await self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        await self.send("Page.enable", session=attached["sessionId"])
        return context, attached["sessionId"]

    async def load(self, session: str, url: str) -> int:
        loaded = asyncio.get_running_loop().create_future()
        self.events[(session, "Page.loadEventFired")] = loaded
        await self.send("Page.navigate", {"url": url}, session)
        await asyncio.wait_for(loaded, 60)
        read = await self.send(
            "Runtime.evaluate", {"expression": DOM_READ, "returnByValue": True}, session
        )
        return int(read["result"]["value"])


async def measure(ws_url: str, server: psutil.Process, urls: list[str], blocks: int) -> dict:
    fresh = Connection(await websockets.connect(ws_url, max_size=None))
    kept = Connection(await websockets.connect(ws_url, max_size=None))
    _, kept_session = await kept.open_page()
    await kept.load(kept_session, urls[0])
    per_page: dict[str, list[tuple[float, float]]] = {"fresh": [], "reuse": []}
    for block in range(2 * blocks):
        mode = "fresh" if block % 2 == 0 else "reuse"
        cpu0, wall0 = sum(server.cpu_times()[:2]), time.monotonic()
        for url in urls:
            if mode == "fresh":
                context, session = await fresh.open_page()
                await fresh.load(session, url)
                await fresh.send("Target.disposeBrowserContext", {"browserContextId": context})
            else:
                await kept.load(kept_session, url)
        cpu = (sum(server.cpu_times()[:2]) - cpu0) / len(urls) * 1000
        wall = (time.monotonic() - wall0) / len(urls) * 1000
        per_page[mode].append((cpu, wall))
        line = "  block %d %-5s server CPU %6.1f ms/page, wall %6.1f ms/page"
        print(line % (block, mode, cpu, wall))
    await fresh.ws.close()
    await kept.ws.close()
    return per_page


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kinds", default="products,spa")
    ap.add_argument("--pages", type=int, default=20, help="pages per block")
    ap.add_argument("--blocks", type=int, default=4, help="blocks of each mode")
    args = ap.parse_args()
    log_dir = Path(tempfile.mkdtemp(prefix="lightpanda-reuse-"))
    site = lightpanda = None
    try:
        site = start_benchsite(SITE, log_dir)
        lightpanda = start_lightpanda(log_dir)
        server = psutil.Process(lightpanda.popen.pid)
        for kind in args.kinds.split(","):
            paths = [PAGE_URL[kind] % (i + 1) for i in range(args.pages)]
            warm_benchsite(site, paths)
            print("%s (%d pages a block):" % (kind, args.pages))
            result = asyncio.run(
                measure(lightpanda.ws_url, server, [site.http_url + p for p in paths], args.blocks)
            )
            for mode, rows in result.items():
                print(
                    "  %-5s median server CPU %6.1f ms/page, wall %6.1f ms/page"
                    % (
                        mode,
                        statistics.median(r[0] for r in rows),
                        statistics.median(r[1] for r in rows),
                    )
                )
    finally:
        stop(lightpanda)
        stop(site)


if __name__ == "__main__":
    main()
