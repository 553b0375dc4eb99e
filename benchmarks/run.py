"""Benchmark scrapy-cdp-pool against its peers on the shared benchmark site.

    python benchmarks/run.py [--pages 300] [--runs 3] [--connections 4]
                             [--only NAME,...] [--page-kinds products,spa,static]

Starts the benchmark site and fetches every page once (the site builds a page once and
keeps it, so no configuration pays for building them), then for each run, each page kind
and each configuration (in that order, so configurations are interleaved across runs)
starts the configuration's server, runs its runner in a subprocess and measures it.
Prints the table and writes benchmarks/RESULTS.md (and the raw runs to
benchmarks/RESULTS.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import configs
import execute
import measure
import procs
import report

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "runners"))
from _common import page_urls, warmup_url  # noqa: E402 - the runners' own URL lists

KINDS = ("products", "spa", "static")


def default_site() -> Path:
    env = os.environ.get("BENCHSITE")
    if env:
        return Path(env)
    for cand in (
        HERE.parents[1] / "shared" / "benchsite" / "server.py",
        Path("/work/shared/benchsite/server.py"),
    ):
        if cand.is_file():
            return cand
    return HERE.parents[1] / "shared" / "benchsite" / "server.py"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--pages", type=int, default=300, help="distinct pages per run (default 300)")
    ap.add_argument("--runs", type=int, default=3, help="runs per configuration (default 3)")
    ap.add_argument(
        "--connections",
        type=int,
        default=4,
        help="CDP connections / browser concurrency (default 4)",
    )
    ap.add_argument("--only", default="", help="comma-separated names or patterns (cdp_pool_*)")
    ap.add_argument("--page-kinds", default=",".join(KINDS))
    ap.add_argument("--site", type=Path, default=default_site(), help="benchsite server.py")
    ap.add_argument(
        "--timeout", type=float, default=0, help="seconds per run (default: 90 + 1 s per page)"
    )
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=10,
        help="before each run, wait up to this many seconds for the machine to be idle "
        "(under 0.3 busy cores; default 10; 0: never wait)",
    )
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--list", action="store_true", help="list the configurations and exit")
    a = ap.parse_args(argv)
    a.kinds = [k.strip() for k in a.page_kinds.split(",") if k.strip()]
    bad = [k for k in a.kinds if k not in KINDS]
    if bad or not a.kinds:
        ap.error("--page-kinds: unknown %s; allowed: %s" % (bad, ",".join(KINDS)))
    if a.pages < 1 or a.runs < 1 or a.connections < 1:
        ap.error("--pages, --runs and --connections must be >= 1")
    return a


def line(r: execute.RunResult) -> str:
    if r.status != "ok":
        return "%-36s %-8s run %d  %s: %s" % (r.config, r.kind, r.run, r.status, r.error[:200])
    cpu = r.cpu_ms_per_page
    return (
        "%-36s %-8s run %d  %7.1f pages/s  valid %s/%d  cpu ms/page srv %.1f crawl %.1f "
        "drv %.1f site %.1f  rss MB srv %.0f crawl %.0f drv %.0f  other load %.2f  (%.0f s)"
        % (
            r.config,
            r.kind,
            r.run,
            r.pages_per_s,
            "-" if r.valid is None else r.valid,
            r.pages,
            cpu["server"],
            cpu["crawler"],
            cpu["driver"],
            cpu["site"],
            r.peak_rss_mb["server"],
            r.peak_rss_mb["crawler"],
            r.peak_rss_mb["driver"],
            r.other_load_cores or 0.0,
            r.wall_s,
        )
    )


def _run_one(
    cfg: configs.Config,
    kind: str,
    run: int,
    site: procs.Managed,
    a: argparse.Namespace,
    log_dir: Path,
    timeout: float,
) -> execute.RunResult:
    try:
        return execute.run_config(
            cfg, kind, run, site=site, pages=a.pages, log_dir=log_dir, timeout_s=timeout
        )
    except Exception as e:  # noqa: BLE001 - one configuration's trouble must not end the run
        return execute.RunResult(
            cfg.name, kind, run, error="harness: %s: %s" % (type(e).__name__, e)
        )


def main(argv: list[str] | None = None) -> int:
    procs.interrupt_on_sigterm()
    a = parse_args(argv)
    chosen = configs.select(configs.build(a.connections), a.only)
    if a.list:
        for c in chosen:
            print("%-36s %s" % (c.name, c.note))
        return 0
    timeout = a.timeout or 90 + a.pages * 1.0
    log_dir = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    command = "python benchmarks/run.py " + shlex.join(argv or sys.argv[1:])
    print("logs in %s" % log_dir, flush=True)
    results: list[execute.RunResult] = []
    skipped = {c.name: configs.missing_requirement(c) for c in chosen}
    failed: set[tuple[str, str]] = set()
    try:
        site = procs.start_benchsite(a.site, log_dir)
    except (procs.StartError, OSError) as e:
        raise SystemExit("cannot start the benchmark site %s: %s" % (a.site, e)) from e
    try:
        # Every page the runners will ask for, built once before any is measured.
        paths = [
            path
            for kind in a.kinds
            for path in (*page_urls("", kind, a.pages), warmup_url("", kind, a.pages))
        ]
        print("site warmed: %d pages in %.1f s" % (len(paths), procs.warm_benchsite(site, paths)))
    except procs.StartError as e:
        procs.stop(site)
        raise SystemExit(str(e)) from e
    t0 = time.monotonic()
    try:
        for run in range(1, a.runs + 1):
            for kind in a.kinds:
                for cfg in chosen:
                    if skipped[cfg.name]:
                        r = execute.RunResult(
                            cfg.name, kind, run, status="skipped", error=skipped[cfg.name]
                        )
                    elif (cfg.name, kind) in failed:
                        continue  # failed in an earlier run: not retried
                    else:
                        if a.wait_quiet > 0:
                            measure.wait_quiet(a.wait_quiet)
                        r = _run_one(cfg, kind, run, site, a, log_dir, timeout)
                        if r.status != "ok":
                            failed.add((cfg.name, kind))
                    results.append(r)
                    if r.status != "skipped" or run == 1:
                        print(line(r), flush=True)
    except KeyboardInterrupt:
        print("interrupted: reporting the runs so far", flush=True)
    finally:
        procs.stop(site)
    rows = report.aggregate(results, chosen, a.kinds)
    notes = [
        "%d pages per run, %d run(s), %d connections; total %.0f s; runner logs in %s"
        % (a.pages, a.runs, a.connections, time.monotonic() - t0, log_dir),
        (
            "plain_scrapy fetches without a browser: the raw HTML of /products and /spa "
            "holds JSON, not the rendered cards/rows, so only HTTP 200s are counted there."
        ),
    ]
    md = report.markdown(rows, report.machine(), command, notes)
    a.out.write_text(md)
    raw = {"connections": a.connections, "kinds": a.kinds, "runs": [r.to_json() for r in results]}
    a.out.with_suffix(".json").write_text(json.dumps(raw, indent=1))
    print()
    print(report.table(rows))
    print()
    print(report.targets(rows))
    print("\nwrote %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
