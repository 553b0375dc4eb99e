"""Quick mode: the plugin at its defaults against each backend's raw CDP floor, one run, ~1 minute.

    python benchmarks/quick.py [--features] [--full-chromium] [--lightpanda-pages 300]
                               [--chromium-pages 60] [--out benchmarks/QUICK.md]

In one process tree (the benchmark site, then one runner subprocess at a time, each measured):

- Lightpanda (/products, ``--lightpanda-pages``): the raw CDP loop (4 connections, a fresh
  context per page: benchmarks/runners/run_raw_cdp.py) and the plugin at its defaults (embedded
  Lightpanda; no CDP_POOL_* nor CONCURRENT_* setting).
- Chromium on its headless shell (``--chromium-pages``): the raw loop keeping one page per
  connection and navigating it again (2 connections: ``--mode kept``), the raw loop with a fresh
  context per page (``--mode fresh``), and the plugin at its defaults (``CDP_POOL_BROWSER =
  "chromium"``, whose default binary is the shell when installed).
- Scrapy alone (``scrapy_floor``: each request answered with one stored page, no download): what
  any Scrapy crawl pays per response; the line under the table splits the plugin's crawler CPU
  into the raw loop's CDP work, Scrapy's own and the rest.
- ``--full-chromium``: the same three on ``/usr/bin/chromium``.
- ``--features``: the plugin again with each default feature switched off in turn, on Lightpanda
  and on the shell (``run_cdp_pool.py --off NAME``): what each costs per page is the defaults
  row's CPU ms (and pages/s) against its row.

Prints pages/s, the ratio to the backend's floor (the kept-page loop for Chromium) and CPU ms per
page, split into browser (the server process tree) and crawler (the runner: Scrapy and the
plugin, or the raw loop), then writes the table to ``--out``. Quote it in a closing note beside
the last landed figure. One run is noisy on a shared machine: the ``other load`` column says how
many cores other processes used meanwhile.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path

import execute
import measure
import procs
from configs import Config
from run import default_site

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "runners"))
from _common import page_urls, warmup_url  # noqa: E402 - the runners' own URL lists
from run_cdp_pool import FEATURES  # noqa: E402 - the features a run may switch off

KIND = "products"
SCRAPY_FLOOR = "scrapy_floor"
#: the default features switched off in turn with --features, per backend (the
#: HTTP cache is Lightpanda's; kept pages, their stop, cleaning and cache guard
#: Chromium's)
LIGHTPANDA_FEATURES = tuple(
    f for f in FEATURES if f not in ("cache_guard", "page_cleaning", "page_stop", "network_events")
)
CHROMIUM_FEATURES = tuple(f for f in FEATURES if f != "http_cache")


Row = tuple[str, Config, int, str]


def _plugin(name: str, *args: str) -> Config:
    return Config(name, "cdp_pool", args=("--defaults", *args))


def _raw(name: str, server: str, connections: int, mode: str) -> Config:
    return Config(name, "raw_cdp", server=server, concurrency=connections, args=("--mode", mode))


def plan(a: argparse.Namespace) -> list[Row]:
    """(group, configuration, pages, floor's name) in run order: each floor first."""
    lp, ch = a.lightpanda_pages, a.chromium_pages
    rows: list[Row] = [
        ("lightpanda", _raw("raw_cdp_loop", "lightpanda", 4, "fresh"), lp, ""),
        ("lightpanda", _plugin("plugin_defaults", "--browser", "lightpanda"), lp, "raw_cdp_loop"),
        # Scrapy alone (each request answered with a stored page, no download):
        # what any Scrapy crawl pays per response, the plugin's included
        ("scrapy", Config(SCRAPY_FLOOR, "scrapy_floor", concurrency=16), lp, "-"),
    ]
    binaries = [("shell", "chromium_shell", procs.CHROMIUM_SHELL)]
    if a.full_chromium:
        binaries.append(("chromium", "chromium", procs.CHROMIUM))
    for label, server, path in binaries:
        group = "chromium (%s)" % label
        kept = "raw_kept_page_" + label
        plugin = _plugin(
            "plugin_defaults_" + label, "--browser", "chromium", "--chromium-path", path
        )
        rows += [
            (group, _raw(kept, server, 2, "kept"), ch, ""),
            (group, _raw("raw_fresh_context_" + label, server, 2, "fresh"), ch, kept),
            (group, plugin, ch, kept),
        ]
    if a.features:
        group = "lightpanda: one default off"
        for feature in LIGHTPANDA_FEATURES:
            off = _plugin("plugin_without_" + feature, "--browser", "lightpanda", "--off", feature)
            rows.append((group, off, lp, "raw_cdp_loop"))
        group = "chromium (shell): one default off"
        for feature in CHROMIUM_FEATURES:
            off = _plugin(
                "plugin_shell_without_" + feature, "--browser", "chromium", "--off", feature,
                "--chromium-path", procs.CHROMIUM_SHELL,
            )  # fmt: skip
            rows.append((group, off, ch, "raw_kept_page_shell"))
    return rows


HEADER = (
    "| group | configuration | pages | pages/s | x floor | CPU ms/page browser | crawler | total "
    "| other load (cores) |\n|---|---|---|---|---|---|---|---|---|"
)


def table(rows: list[Row], results: dict[str, execute.RunResult]) -> list[str]:
    lines = [HEADER]
    for group, cfg, pages, floor in rows:
        r = results.get(cfg.name)
        if r is None or r.status != "ok":
            error = r.error[:80] if r is not None else "not run"
            lines.append("| %s | %s | %d | %s | | | | | |" % (group, cfg.name, pages, error))
            continue
        ref = results.get(floor)
        if not floor:
            ratio = "floor"
        elif floor == "-":
            ratio = "n/a"
        elif ref is not None and ref.status == "ok" and ref.pages_per_s:
            ratio = "%.2f" % (r.pages_per_s / ref.pages_per_s)
        else:
            ratio = "n/a"
        browser = r.cpu_ms_per_page.get("server", 0.0)
        crawler = r.cpu_ms_per_page.get("crawler", 0.0)
        lines.append(
            "| %s | %s | %d | %.1f | %s | %.2f | %.2f | %.2f | %.2f |"
            % (group, cfg.name, r.pages, r.pages_per_s, ratio, browser, crawler,
               browser + crawler, r.other_load_cores or 0.0)
        )  # fmt: skip
    return lines


def crawler_budget(results: dict[str, execute.RunResult]) -> list[str]:
    """Where the plugin's crawler CPU per page goes on Lightpanda: the raw
    loop's (its CDP work), Scrapy's own (the floor), and the rest (the
    plugin's own Python and its extra messages)."""
    runs = [results.get(n) for n in ("raw_cdp_loop", "plugin_defaults", SCRAPY_FLOOR)]
    if any(r is None or r.status != "ok" for r in runs):
        return []
    raw, plugin, scrapy = (r.cpu_ms_per_page.get("crawler", 0.0) for r in runs if r is not None)
    return [
        "",
        "Lightpanda, crawler CPU ms a page: plugin %.2f = raw loop's CDP work %.2f + Scrapy's own "
        "%.2f (scrapy_floor: no download) + the rest %.2f (the plugin's own Python, its extra "
        "commands and events)" % (plugin, raw, scrapy, plugin - raw - scrapy),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--lightpanda-pages", type=int, default=300)
    ap.add_argument("--chromium-pages", type=int, default=60)
    ap.add_argument("--features", action="store_true", help="each default feature off in turn")
    ap.add_argument("--full-chromium", action="store_true", help="also /usr/bin/chromium")
    ap.add_argument("--site", type=Path, default=default_site())
    ap.add_argument("--out", type=Path, default=HERE / "QUICK.md")
    a = ap.parse_args(argv)
    procs.interrupt_on_sigterm()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-quick-"))
    rows = plan(a)
    site = procs.start_benchsite(a.site, log_dir)
    results: dict[str, execute.RunResult] = {}
    t0 = time.monotonic()
    try:
        most = max(a.lightpanda_pages, a.chromium_pages)
        procs.warm_benchsite(site, [*page_urls("", KIND, most), warmup_url("", KIND, most)])
        for _group, cfg, pages, _floor in rows:
            measure.wait_quiet(5)
            r = execute.run_config(
                cfg, KIND, 1, site=site, pages=pages, log_dir=log_dir, timeout_s=90 + pages
            )
            results[cfg.name] = r
            done = "%.1f pages/s" % r.pages_per_s if r.status == "ok" else r.error[:200]
            print("%-34s %s" % (cfg.name, done), flush=True)
    except KeyboardInterrupt:
        print("interrupted: reporting the runs so far", flush=True)
    finally:
        procs.stop(site)
    args = shlex.join(argv if argv is not None else sys.argv[1:])
    about = ", ".join("%s: %s" % kv for kv in _machine().items())
    lines = [
        "command: `python benchmarks/quick.py %s`" % args,
        "",
        "%s; %s; total %.0f s" % (KIND, about, time.monotonic() - t0),
        "",
        *table(rows, results),
        *crawler_budget(results),
    ]
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    a.out.write_text(text)
    print("wrote %s (logs in %s)" % (a.out, log_dir))
    return 0 if all(r.status == "ok" for r in results.values()) else 1


def _machine() -> dict[str, str]:
    import report

    info = report.machine()
    return {"machine": info["machine"], "browsers": info["browsers"]}


if __name__ == "__main__":
    sys.exit(main())
