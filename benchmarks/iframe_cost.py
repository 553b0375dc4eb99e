"""What loading iframes costs on the embedded Lightpanda (not run by the tests).

    python benchmarks/iframe_cost.py [--pages 100] [--frames 3] [--blocks 3]

Lightpanda 1.0.2 loads no ``<iframe>`` unless started with
``--load-resources iframe`` (``CDP_POOL_LIGHTPANDA_ARGS``). This crawls a local
site (aiohttp on 127.0.0.1, an ephemeral port) whose pages each hold
``--frames`` same-origin iframes, each a small document with a script, with the
add-on's defaults and with the flag, in alternated blocks of ``--pages``
pages (the machine's other load falls on both alike), and prints pages/s and
the frame documents the site served per page.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import scrapy
from aiohttp import web
from scrapy.crawler import CrawlerRunner
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.reactor import install_reactor

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "iframes": {"CDP_POOL_LIGHTPANDA_ARGS": ["--load-resources", "iframe"]},
}


class Pages(scrapy.Spider):
    name = "iframe_cost"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.done = 0

    async def start(self) -> Any:
        for url in self.urls:
            yield scrapy.Request(url, meta={"cdp": True}, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> None:
        self.done += 1


def site(frames: int, hits: dict[str, int]) -> web.Application:
    async def page(request: web.Request) -> web.Response:
        n = request.query.get("n", "0")
        body = "".join(f'<iframe src="/frame?n={n}&i={i}"></iframe>' for i in range(frames))
        return web.Response(text=f"<!doctype html><title>{n}</title><p>page {n}</p>{body}",
                            content_type="text/html")  # fmt: skip

    async def frame(request: web.Request) -> web.Response:
        hits["frames"] += 1
        return web.Response(
            text="<!doctype html><p id=f>frame</p><script>document.title = 'f' + 1;</script>",
            content_type="text/html",
        )

    app = web.Application()
    app.router.add_get("/page", page)
    app.router.add_get("/frame", frame)
    return app


async def main(args: argparse.Namespace) -> None:
    hits = {"frames": 0}
    runner = web.AppRunner(site(args.frames, hits))
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
    try:
        for block in range(args.blocks):
            for name, settings in VARIANTS.items():
                urls = [f"http://127.0.0.1:{port}/page?n={block}-{i}" for i in range(args.pages)]
                crawler_runner = CrawlerRunner(
                    {"ADDONS": {"scrapy_cdp_pool.Addon": 0}, "LOG_LEVEL": "WARNING",
                     "TELNETCONSOLE_ENABLED": False, **settings}
                )  # fmt: skip
                crawler = crawler_runner.create_crawler(Pages)
                before = hits["frames"]
                started = time.monotonic()
                await maybe_deferred_to_future(crawler_runner.crawl(crawler, urls=urls))
                seconds = time.monotonic() - started
                spider = crawler.spider
                assert isinstance(spider, Pages)
                assert spider.done == args.pages, "pages lost"
                frames = (hits["frames"] - before) / args.pages
                results[name].append((args.pages / seconds, frames))
                print(f"block {block} {name}: {args.pages / seconds:.1f} pages/s, "
                      f"{frames:.1f} frame documents a page", flush=True)  # fmt: skip
    finally:
        await runner.cleanup()
    for name, rows in results.items():
        print(f"{name}: median {statistics.median(r[0] for r in rows):.1f} pages/s, "
              f"{statistics.median(r[1] for r in rows):.1f} frame documents a page")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--blocks", type=int, default=3)
    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from twisted.internet import reactor

    done = deferred_from_coro(main(parser.parse_args()))
    done.addErrback(lambda failure: failure.printTraceback())
    done.addBoth(lambda _: reactor.stop())  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
