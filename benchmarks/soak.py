"""Soak: N pages (default 10,000) through the plugin on Lightpanda, with the RSS of the
server and of the crawler every 1,000 pages; writes benchmarks/SOAK.md.

    python benchmarks/soak.py [--pages 10000] [--every 1000] [--connections 4]
                              [--config cdp_pool_lightpanda_ext] [--page-kind products]

The default configuration runs the server outside the crawler (CDP_POOL_ENDPOINTS), so the
server's RSS is its own process tree's; the crawler's RSS is measured inside the crawl
subprocess (its own Python process, at the moment it counts the Nth response). Any other
Scrapy-based configuration can be soaked the same way for comparison (e.g.
scrapy_playwright_lightpanda_c1, where the driver's RSS matters).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

import configs
import execute
import measure
import procs
import report
from run import KINDS, default_site

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024
SCRAPY_RUNNERS = ("cdp_pool", "scrapy_playwright", "plain_scrapy")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--pages", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=1_000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--config", default="cdp_pool_lightpanda_ext")
    ap.add_argument("--page-kind", default="products", choices=KINDS)
    ap.add_argument("--site", type=Path, default=default_site())
    ap.add_argument("--timeout", type=float, default=0, help="seconds (default: 120 + 0.5 s/page)")
    ap.add_argument("--out", type=Path, default=HERE / "SOAK.md")
    a = ap.parse_args(argv)
    if a.pages < 1 or not 1 <= a.every <= a.pages:
        ap.error("need --pages >= 1 and 1 <= --every <= --pages")
    return a


def growth(points: list[dict], key: str, from_pages: int) -> str:
    base = next((p for p in points if p["pages"] >= from_pages), points[0] if points else None)
    if base is None or not points or not base[key]:
        return "n/a"
    last = points[-1]
    return "%+.1f MB (%+.1f%%) from page %d to page %d" % (
        last[key] - base[key],
        100 * (last[key] - base[key]) / base[key],
        base["pages"],
        last["pages"],
    )


def main(argv: list[str] | None = None) -> int:
    procs.interrupt_on_sigterm()
    a = parse_args(argv)
    chosen = configs.select(configs.build(a.connections), a.config)
    if len(chosen) != 1:
        raise SystemExit("--config must name one configuration, not %s" % [c.name for c in chosen])
    cfg = chosen[0]
    if cfg.runner not in SCRAPY_RUNNERS:
        raise SystemExit("--config must be a Scrapy-based configuration, not %s" % cfg.name)
    missing = configs.missing_requirement(cfg)
    if missing:
        raise SystemExit("%s skipped: %s" % (cfg.name, missing))
    log_dir = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    points: list[dict] = []

    def on_progress(ev: dict, sampler: measure.TreeSampler) -> None:
        snap = sampler.sample()
        p = {
            "pages": ev["pages"],
            "crawler_rss_mb": ev["crawler_rss_mb"],
            "server_rss_mb": round(snap.rss["server"] / MB, 1),
            "server_pss_mb": round(snap.pss["server"] / MB, 1) if sampler.pss_available else None,
            "driver_rss_mb": round(snap.rss["driver"] / MB, 1),
        }
        points.append(p)
        print(
            "%6d pages  crawler RSS %6.1f MB  server RSS %6.1f MB  driver RSS %6.1f MB"
            % (p["pages"], p["crawler_rss_mb"], p["server_rss_mb"], p["driver_rss_mb"]),
            flush=True,
        )

    print(
        "soak: %s, %d %s pages, logs in %s" % (cfg.name, a.pages, a.page_kind, log_dir), flush=True
    )
    try:
        site = procs.start_benchsite(a.site, log_dir)
    except (procs.StartError, OSError) as e:
        raise SystemExit("cannot start the benchmark site %s: %s" % (a.site, e)) from e
    try:
        res = execute.run_config(
            cfg,
            a.page_kind,
            1,
            site=site,
            pages=a.pages,
            log_dir=log_dir,
            timeout_s=a.timeout or 120 + a.pages * 0.5,
            progress_every=a.every,
            on_progress=on_progress,
        )
    finally:
        procs.stop(site)
    command = "python benchmarks/soak.py " + shlex.join(argv or sys.argv[1:])
    a.out.write_text(markdown(cfg, a, res, points, command))
    status = "ok" if res.status == "ok" else "failed: " + res.error
    print(
        "%s: %.1f pages/s, valid %s/%d, %s"
        % (cfg.name, res.pages_per_s, res.valid, res.pages, status)
    )
    print("crawler RSS %s" % growth(points, "crawler_rss_mb", 2000))
    print("server RSS %s" % growth(points, "server_rss_mb", 0))
    print("wrote %s" % a.out)
    return 0 if res.status == "ok" else 1


def _per_category(values: dict[str, float | None]) -> str:
    return ", ".join(
        "%s %s" % (k, "-" if v is None else "%.1f" % v) for k, v in values.items() if k != "site"
    )


def markdown(
    cfg: configs.Config,
    a: argparse.Namespace,
    res: execute.RunResult,
    points: list[dict],
    command: str,
) -> str:
    info = report.machine()
    rows = [
        "| pages | crawler RSS MB | server RSS MB | server PSS MB | driver RSS MB |",
        "|---|---|---|---|---|",
    ]
    rows += [
        "| %d | %.1f | %.1f | %s | %.1f |"
        % (
            p["pages"],
            p["crawler_rss_mb"],
            p["server_rss_mb"],
            "-" if p["server_pss_mb"] is None else "%.1f" % p["server_pss_mb"],
            p["driver_rss_mb"],
        )
        for p in points
    ]
    status = "ok" if res.status == "ok" else "failed: " + res.error
    return "\n".join(
        [
            "# Soak",
            "",
            "Generated by `%s` on %s." % (command, info["date"]),
            "",
            "- Configuration: `%s` (%s), %d connections, %d `/%s` pages, RSS every %d pages"
            % (cfg.name, cfg.note, cfg.concurrency, a.pages, a.page_kind, a.every),
            "- Result: %s; %.1f pages/s; valid %s of %d; errors %d"
            % (status, res.pages_per_s, res.valid, res.pages, res.errors),
            "- Machine: %s" % info["machine"],
            "- Python %s; %s" % (info["python"], info["versions"]),
            "- Browsers: %s" % info["browsers"],
            "",
            *rows,
            "",
            "- Crawler RSS (target: grows <= 10%% from page 2,000 to the end): %s"
            % growth(points, "crawler_rss_mb", 2000),
            "- Server RSS (target: flat): %s" % growth(points, "server_rss_mb", 0),
            "- Peak over the whole run, MB: RSS %s; PSS %s"
            % (_per_category(res.peak_rss_mb), _per_category(res.peak_pss_mb)),
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
