"""Dedicated Lightpanda servers: what a profile's time zone (or proxy) costs when
Lightpanda takes it only for a whole server.

    python benchmarks/dedicated.py [--profiles 4] [--pages 200] [--runs 3]

On the benchmark site's /products, a crawl of --pages pages spread evenly over
--profiles stored profiles (one request in flight per profile), each
configuration in its own subprocess, interleaved over --runs runs:

  plain          the profiles have no time zone: every page on the one embedded Lightpanda
  dedicated      each profile has its own time zone: one dedicated server per profile
                 (CDP_POOL_DEDICATED_SERVERS = --profiles)
  dedicated_cap  the same with CDP_POOL_DEDICATED_SERVERS = --profiles // 2: servers are
                 stopped and started to make room

Time zones rather than proxies: a proxy adds its own cost, which is not the
plugin's. Prints, per configuration, the median pages/s, dedicated servers
started, and the peak memory of all its Lightpanda servers together (PSS, MB:
the crawl's cdp_pool/server_pss_mb_max, sampled every 0.25 s); writes
benchmarks/DEDICATED.md.
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
ZONES = ("Asia/Tokyo", "Europe/Paris", "America/New_York", "Australia/Sydney",
         "Africa/Cairo", "America/Sao_Paulo", "Asia/Kolkata", "Europe/Moscow")  # fmt: skip
CONFIGS = ("plain", "dedicated", "dedicated_cap")


def write_profiles(directory: Path, profiles: int, zoned: bool) -> list[str]:
    names = []
    for i in range(profiles):
        name = f"p{i}"
        (directory / f"{name}.json").write_text(json.dumps({"cookies": [], "origins": []}))
        if zoned:
            identity = {"timezoneId": ZONES[i % len(ZONES)]}
            (directory / f"{name}.identity.json").write_text(json.dumps(identity))
        names.append(name)
    return names


def crawl_once(config: str, site: str, profiles: int, pages: int) -> dict:
    """In the subprocess: one crawl, its figures as a dict."""
    import scrapy
    from scrapy.crawler import CrawlerProcess

    with tempfile.TemporaryDirectory(prefix="bench-dedicated-") as tmp:
        names = write_profiles(Path(tmp), profiles, zoned=config != "plain")
        urls = [(f"{site}/products?i={i}", names[i % profiles]) for i in range(pages)]

        class Spider(scrapy.Spider):
            name = "dedicated"
            ok = 0

            async def start(self):  # type: ignore[no-untyped-def]
                for url, profile in urls:
                    yield scrapy.Request(url, meta={"cdp_profile": profile})

            def parse(self, response):  # type: ignore[no-untyped-def]
                Spider.ok += response.status == 200 and b"product" in response.body

        settings = {
            "ADDONS": {"scrapy_cdp_pool.Addon": 0},
            "CDP_POOL_PROFILES_DIR": tmp,
            "CDP_POOL_CONNECTIONS": profiles,
            "CONCURRENT_REQUESTS": 2 * profiles,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 2 * profiles,
            "CDP_POOL_STATUS_INTERVAL_SECONDS": 0.25,
            "CDP_POOL_DEDICATED_SERVERS": profiles // 2 if config == "dedicated_cap" else profiles,
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
    return {
        "config": config,
        "pages_ok": Spider.ok,
        "seconds": round(elapsed, 2),
        "pages_per_s": round(Spider.ok / elapsed, 1),
        "started": stats.get("cdp_pool/dedicated_servers/started", 0),
        "server_pss_mb_max": stats.get("cdp_pool/server_pss_mb_max"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--profiles", type=int, default=4)
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--site", type=Path, default=default_site())
    ap.add_argument("--out", type=Path, default=HERE / "DEDICATED.md")
    ap.add_argument("--one", choices=CONFIGS, help=argparse.SUPPRESS)
    ap.add_argument("--site-url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print("BENCH " + json.dumps(crawl_once(args.one, args.site_url, args.profiles, args.pages)))
        return
    if args.profiles < 2:
        ap.error("--profiles must be at least 2")
    procs.interrupt_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as logs:
        site = procs.start_benchsite(args.site, Path(logs))
        results: dict[str, list[dict]] = {config: [] for config in CONFIGS}
        try:
            for run in range(1, args.runs + 1):
                for config in CONFIGS:
                    out = subprocess.run(
                        [sys.executable, __file__, "--one", config, "--site-url", site.http_url,
                         "--profiles", str(args.profiles), "--pages", str(args.pages)],
                        capture_output=True, text=True, timeout=600, check=False,
                    )  # fmt: skip
                    line = next((x for x in out.stdout.splitlines() if x.startswith("BENCH ")), "")
                    if not line:
                        sys.exit(f"{config} failed:\n{out.stderr[-3000:]}")
                    result = json.loads(line[6:])
                    results[config].append(result)
                    print(f"run {run} {config:<14} {result}", flush=True)
        finally:
            procs.stop(site)
    header = (
        "| config | pages/s (median) | valid pages | dedicated servers started | "
        "peak PSS of all Lightpanda servers, MB |"
    )
    rows = [header, "|---|---|---|---|---|"]
    for config, runs in results.items():
        rows.append(
            f"| {config} | {statistics.median(r['pages_per_s'] for r in runs):.1f} | "
            f"{sum(r['pages_ok'] for r in runs)}/{args.pages * len(runs)} | "
            f"{statistics.median(r['started'] for r in runs):g} | "
            f"{statistics.median(r['server_pss_mb_max'] or 0 for r in runs):.1f} |"
        )
    table = "\n".join(rows)
    print(table)
    command = (f"python benchmarks/dedicated.py --profiles {args.profiles} --pages {args.pages} "
               f"--runs {args.runs}")  # fmt: skip
    args.out.write_text(f"# Dedicated servers\n\n`{command}`\n\n{table}\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
