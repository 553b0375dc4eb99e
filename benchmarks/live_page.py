"""What ``meta["cdp_include_page"]`` (the live page) costs.

    python benchmarks/live_page.py [--browser lightpanda] [--pages 200] [--runs 3] [--connections 4]

On the benchmark site's /products, a crawl of --pages distinct pages, each
configuration in its own subprocess, interleaved over --runs runs:

  plain  meta["cdp"] only: the rendered DOM, the context disposed at once
  live   meta["cdp_include_page"] too: the callback reads the title through the
         Playwright page (one round trip) and closes it (await page.close())

Prints, per configuration, the median pages/s and CPU seconds per page of the
crawler process (Python), of the Playwright driver (Node.js; live only) and of
the browser server (every lightpanda / chromium process of the crawl), read
with psutil when the spider closes; writes benchmarks/LIVE_PAGE.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import procs
from run import default_site

HERE = Path(__file__).resolve().parent
CONFIGS = ("plain", "live")


def _cpu(process) -> float:  # type: ignore[no-untyped-def]
    times = process.cpu_times()
    return float(times.user + times.system)


def crawl_once(config: str, site: str, browser: str, pages: int, connections: int) -> dict:
    """In the subprocess: one crawl, its figures as a dict."""
    import psutil
    import scrapy
    from scrapy.crawler import CrawlerProcess

    urls = [f"{site}/products?i={i}" for i in range(pages)]
    cpu: dict[str, float] = {}

    class Spider(scrapy.Spider):
        name = "live_page"
        ok = 0

        async def start(self):  # type: ignore[no-untyped-def]
            for url in urls:
                meta = {"cdp": True, "cdp_include_page": config == "live"}
                yield scrapy.Request(url, meta=meta)

        async def parse(self, response):  # type: ignore[no-untyped-def]
            page = response.meta.get("cdp_page")
            if page is not None:
                if await page.title() is not None:
                    Spider.ok += response.status == 200 and b"product" in response.body
                await page.close()
            else:
                Spider.ok += response.status == 200 and b"product" in response.body
            return
            yield

        def closed(self, reason):  # type: ignore[no-untyped-def]
            # Runs before the plugin's own spider_closed handler stops the
            # driver: every process of the crawl is still there.
            me = psutil.Process()
            cpu["crawler"] = _cpu(me)
            for child in me.children(recursive=True):
                try:
                    name = child.name()
                    kind = "driver" if name.startswith("node") else "server"
                    cpu[kind] = cpu.get(kind, 0.0) + _cpu(child)
                except psutil.Error:
                    pass

    settings = {
        "ADDONS": {"scrapy_cdp_pool.Addon": 0},
        "CDP_POOL_BROWSER": browser,
        "CDP_POOL_CONNECTIONS": connections,
        "CONCURRENT_REQUESTS": 2 * connections,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2 * connections,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
    }
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(Spider)
    process.crawl(crawler)
    started = time.monotonic()
    process.start()
    elapsed = time.monotonic() - started
    stats = crawler.stats.get_stats()
    ok = Spider.ok
    return {
        "config": config,
        "pages_ok": ok,
        "seconds": round(elapsed, 2),
        "pages_per_s": round(ok / elapsed, 1),
        "crawler_cpu_ms_per_page": round(1000 * cpu.get("crawler", 0) / max(ok, 1), 1),
        "driver_cpu_ms_per_page": round(1000 * cpu.get("driver", 0) / max(ok, 1), 1),
        "server_cpu_ms_per_page": round(1000 * cpu.get("server", 0) / max(ok, 1), 1),
        "live_pages": stats.get("cdp_pool/live_pages", 0),
        "closed_at_deadline": stats.get("cdp_pool/live_pages_closed_at_deadline", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--browser", choices=("lightpanda", "chromium"), default="lightpanda")
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--site", type=Path, default=default_site())
    ap.add_argument("--out", type=Path, default=HERE / "LIVE_PAGE.md")
    ap.add_argument("--one", choices=CONFIGS, help=argparse.SUPPRESS)
    ap.add_argument("--site-url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        result = crawl_once(args.one, args.site_url, args.browser, args.pages, args.connections)
        print("BENCH " + json.dumps(result))
        return
    procs.interrupt_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as logs:
        site = procs.start_benchsite(args.site, Path(logs))
        results: dict[str, list[dict]] = {config: [] for config in CONFIGS}
        try:
            for run in range(1, args.runs + 1):
                for config in CONFIGS:
                    out = subprocess.run(
                        [sys.executable, __file__, "--one", config, "--site-url", site.http_url,
                         "--browser", args.browser, "--pages", str(args.pages),
                         "--connections", str(args.connections)],
                        capture_output=True, text=True, timeout=900, check=False,
                    )  # fmt: skip
                    line = next((x for x in out.stdout.splitlines() if x.startswith("BENCH ")), "")
                    if not line:
                        sys.exit(f"{config} failed:\n{out.stderr[-3000:]}")
                    result = json.loads(line[6:])
                    results[config].append(result)
                    print(f"run {run} {config:<6} {result}", flush=True)
        finally:
            procs.stop(site)
    rows = [
        (
            "| config | pages/s (median) | valid pages | crawler CPU ms/page | Playwright driver "
            "CPU ms/page | server CPU ms/page |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for config, runs in results.items():

        def median(key: str, runs: list[dict] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        rows.append(
            f"| {config} | {median('pages_per_s'):.1f} | "
            f"{sum(r['pages_ok'] for r in runs)}/{args.pages * len(runs)} | "
            f"{median('crawler_cpu_ms_per_page'):.1f} | {median('driver_cpu_ms_per_page'):.1f} | "
            f"{median('server_cpu_ms_per_page'):.1f} |"
        )
    table = "\n".join(rows)
    print(table)
    command = (
        f"python benchmarks/live_page.py --browser {args.browser} --pages {args.pages} "
        f"--runs {args.runs} --connections {args.connections}"
    )
    args.out.write_text(f"# The live page (meta['cdp_include_page'])\n\n`{command}`\n\n{table}\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
