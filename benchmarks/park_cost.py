"""What parking a kept Chromium page costs, step by step (not run by the tests).

    python benchmarks/park_cost.py http://127.0.0.1:4800 \\
        0:none,0:blank,0:blank+clear,1:blank+clear --features ,Prerender2 \\
        [--blocks 5] [--pages 40]

Raw CDP over ``--remote-debugging-pipe``, the embedded Chromium's flags
(``server_flags.CHROMIUM_FLAGS``), 4 browser contexts with one kept page each,
intercepting as the plugin does (main documents at the response stage, every
response with the kept pages' cache guard, images/CSS/fonts/media failed).
Each page renders ``/products?page=N`` of the benchmark site (load event, then
its DOM read), then is parked by its variant's steps:

- ``none``: nothing, the next URL is navigated at once;
- ``blank``: the session storage emptied by script, then ``about:blank``
  navigated until it stopped loading (``page_reuse.stop_page``);
- ``clear``: the origin's storage (``page_reuse.ORIGIN_STORAGE_TYPES``) and
  the context's cookies cleared (``page_reuse.clean_for_reuse``);
- ``clearall``: the same with ``storageTypes: "all"``.

A variant is ``B:steps`` where ``B`` is a browser: ``0`` has the plugin's
flags; each ``--features`` adds a browser (``1``, ``2``...) with those names
added to its ``--disable-features`` (a browser with ``--features ""`` is a
control, the same as ``0``; ``0`` already has the plugin's
``RenderDocument`` off). Variants run in alternated blocks of ``--pages``
pages, so that the machine's other load falls on all of them alike; printed:
the CPU of each browser's process tree (exited children included) per page,
per block and as medians. The machine is shared: compare variants of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scrapy_cdp_pool.browser.pool.page_reuse import ORIGIN_STORAGE_TYPES
from scrapy_cdp_pool.browser.pool.server_flags import CHROMIUM_FLAGS

CHROMIUM = os.environ.get("BENCH_CHROMIUM", "/usr/bin/chromium")
BLOCKED = ("Image", "Stylesheet", "Font", "Media")


class Pipe:
    """A CDP client over the browser's pipe (fds 3 and 4 on its side)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.listeners: dict[str, Any] = {}
        self.buffer = b""
        os.set_blocking(read_fd, False)
        asyncio.get_running_loop().add_reader(read_fd, self._readable)

    def _readable(self) -> None:
        try:
            self.buffer += os.read(self.read_fd, 1 << 20)
        except BlockingIOError:
            return
        while b"\0" in self.buffer:
            raw, self.buffer = self.buffer.split(b"\0", 1)
            message = json.loads(raw)
            if "id" in message:
                future = self.pending.pop(message["id"], None)
                if future is None or future.done():
                    continue
                if "error" in message:
                    future.set_exception(RuntimeError(message["error"]))
                else:
                    future.set_result(message.get("result", {}))
            elif message.get("sessionId") in self.listeners:
                self.listeners[message["sessionId"]](message["method"], message.get("params", {}))

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> asyncio.Future[Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        os.set_blocking(self.write_fd, True)
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        return future


class KeptPage:
    def __init__(self, cdp: Pipe, context_id: str, target_id: str, session_id: str) -> None:
        self.cdp, self.context_id = cdp, context_id
        self.target_id, self.session_id = target_id, session_id
        self.loaded = asyncio.Event()
        self.stopped = asyncio.Event()
        self.bad = 0
        self.tasks: set[asyncio.Task[None]] = set()
        cdp.listeners[session_id] = self.on_event

    async def arm(self) -> None:
        patterns = [
            {"resourceType": "Document", "requestStage": "Response"},
            {"requestStage": "Response"},
            *({"resourceType": kind} for kind in BLOCKED),
        ]
        s = self.session_id
        await asyncio.gather(
            self.cdp.send("Page.enable", {}, s),
            self.cdp.send("Fetch.enable", {"patterns": patterns}, s),
            self.cdp.send("Network.enable", {}, s),
        )

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Fetch.requestPaused":
            task = asyncio.get_running_loop().create_task(self.on_paused(params))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif method == "Page.loadEventFired":
            self.loaded.set()
        elif method == "Page.frameStoppedLoading" and params.get("frameId") == self.target_id:
            self.stopped.set()

    async def on_paused(self, params: dict[str, Any]) -> None:
        request, s = {"requestId": params["requestId"]}, self.session_id
        try:
            if params.get("responseStatusCode") is None and not params.get("responseErrorReason"):
                await self.cdp.send(
                    "Fetch.failRequest", {**request, "errorReason": "BlockedByClient"}, s
                )
                return
            if params.get("resourceType") == "Document":
                await self.cdp.send("Fetch.getResponseBody", request, s)
            await self.cdp.send("Fetch.continueResponse", request, s)
        except RuntimeError:
            pass  # the request went with its page

    async def render(self, url: str) -> None:
        self.loaded.clear()
        await self.cdp.send("Page.navigate", {"url": url}, self.session_id)
        await self.loaded.wait()
        read = {"expression": "document.documentElement.outerHTML", "returnByValue": True}
        answer = await self.cdp.send("Runtime.evaluate", read, self.session_id)
        if answer["result"]["value"].count('class="product"') != 30:
            self.bad += 1

    async def park(self, steps: set[str], origin: str) -> None:
        cdp, s = self.cdp, self.session_id
        if "blank" in steps:
            clear = {"expression": "try { sessionStorage.clear(); } catch (e) {}"}
            await cdp.send("Runtime.evaluate", clear, s)
            self.stopped.clear()
            await cdp.send("Page.navigate", {"url": "about:blank"}, s)
            await self.stopped.wait()
        types = "all" if "clearall" in steps else ORIGIN_STORAGE_TYPES if "clear" in steps else ""
        if types:
            await asyncio.gather(
                cdp.send(
                    "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": types}, s
                ),
                cdp.send("Storage.clearCookies", {"browserContextId": self.context_id}),
            )


async def launch(features: str) -> tuple[asyncio.subprocess.Process, list[KeptPage]]:
    flags = [f + features if f.startswith("--disable-features=") else f for f in CHROMIUM_FLAGS]
    to_browser, from_browser = os.pipe(), os.pipe()
    profile = tempfile.mkdtemp(prefix="park-cost-")
    argv = [
        CHROMIUM,
        *flags,
        "--remote-debugging-pipe",
        f"--user-data-dir={profile}",
        "about:blank",
    ]

    def child() -> None:
        os.dup2(to_browser[0], 3)
        os.dup2(from_browser[1], 4)

    proc = await asyncio.create_subprocess_exec(
        *argv, pass_fds=(3, 4), preexec_fn=child,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    os.close(to_browser[0])
    os.close(from_browser[1])
    cdp = Pipe(from_browser[0], to_browser[1])
    await cdp.send("Browser.getVersion")
    pages = []
    for _ in range(4):
        context = (await cdp.send("Target.createBrowserContext"))["browserContextId"]
        blank = {"url": "about:blank", "browserContextId": context}
        target = (await cdp.send("Target.createTarget", blank))["targetId"]
        attach = {"targetId": target, "flatten": True}
        session = (await cdp.send("Target.attachToTarget", attach))["sessionId"]
        page = KeptPage(cdp, context, target, session)
        await page.arm()
        pages.append(page)
    return proc, pages


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants, reaped children included."""
    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue  # exited during the walk: its parent counts it once reaped
        total += t.user + t.system + t.children_user + t.children_system
    return total


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("site", help="the benchmark site's base URL")
    ap.add_argument("variants", help="comma-separated BROWSER:STEPS, e.g. 0:none,0:blank+clear")
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument(
        "--pages", type=int, default=40, help="pages per block (4 per kept page at least)"
    )
    ap.add_argument(
        "--features", action="append", default=[], help="a browser with these disabled too"
    )
    args = ap.parse_args()
    site = args.site.rstrip("/")
    browsers = [await launch(features) for features in ["", *args.features]]
    variants = [
        (v, int(v.split(":")[0]), set(v.split(":")[1].split("+"))) for v in args.variants.split(",")
    ]
    numbers = iter(range(1000, 10**9))

    async def worker(page: KeptPage, steps: set[str], count: int) -> None:
        for _ in range(count):
            await page.render(f"{site}/products?page={next(numbers)}")
            await page.park(steps, site)

    for _name, browser, steps in variants:  # warm-up
        await asyncio.gather(*(worker(p, steps, 3) for p in browsers[browser][1]))
    results: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    for _ in range(args.blocks):
        for name, browser, steps in variants:
            proc, pages = browsers[browser]
            before, started = tree_cpu_s(proc.pid), time.monotonic()
            await asyncio.gather(*(worker(p, steps, args.pages // 4) for p in pages))
            wall = time.monotonic() - started
            per_page = 1000 * (tree_cpu_s(proc.pid) - before) / (args.pages // 4 * 4)
            results[name].append(per_page)
            print(
                f"{name:24s} {per_page:7.1f} ms/page  {args.pages / wall:5.1f} pages/s", flush=True
            )
    bad = sum(p.bad for _, pages in browsers for p in pages)
    print(f"--- medians (pages without their 30 products: {bad})")
    for name, values in results.items():
        ordered = sorted(values)
        print(
            f"{name:24s} {ordered[len(ordered) // 2]:7.1f} ms/page  {[round(v) for v in ordered]}"
        )
    for proc, _ in browsers:
        proc.terminate()
        await proc.wait()


if __name__ == "__main__":
    asyncio.run(main())
