"""Quick mode: the plugin at its defaults against each backend's raw CDP floor, 2 rounds, ~1 minute.

    python benchmarks/quick.py [--features] [--full-chromium] [--lightpanda-pages 300]
                               [--chromium-pages 60] [--rounds 2] [--out benchmarks/QUICK.md]

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

Every configuration runs ``--rounds`` times (default 2), the rounds one after the other and each
round every row in turn, so a configuration and its floor run minutes apart at most and a slow
spell of the machine falls on both. Prints pages/s, the ratio to the backend's floor (the
kept-page loop for Chromium) and CPU ms per page, split into browser (the server process tree)
and crawler (the runner: Scrapy and the plugin, or the raw loop), then writes the table to
``--out``: each figure the median over the rounds, the ratio the median of each round's ratio
(a row and its floor from the same round); a line under the table gives every round's ratio.
Quote it in a closing note beside the last landed figure. One round's ratio moved by a quarter
between back-to-back runs on a quiet 2-core machine (Lightpanda 0.63 then 0.89, 2026-12-07): the
``other load`` column says how many cores other processes used meanwhile (the largest over the
rounds), which does not see a slower host.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
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


Results = dict[str, list[execute.RunResult]]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _ok(runs: list[execute.RunResult] | None) -> bool:
    """Whether the row ran and every round of it succeeded."""
    return runs is not None and len(runs) > 0 and all(r.status == "ok" for r in runs)


def _cpu(runs: list[execute.RunResult], part: str) -> float:
    return _median([r.cpu_ms_per_page.get(part, 0.0) for r in runs])


def round_ratios(results: Results, name: str, floor: str) -> list[float]:
    """``name``'s pages/s over its floor's, round by round (rounds where
    both ran and the floor did some pages); none for a floor itself (``""``)
    or a row without one (``"-"``): no run goes by those names."""
    pairs = zip(results.get(name, []), results.get(floor, []), strict=False)
    return [
        r.pages_per_s / f.pages_per_s
        for r, f in pairs
        if r.status == "ok" and f.status == "ok" and f.pages_per_s
    ]


def table(rows: list[Row], results: Results) -> list[str]:
    lines = [HEADER]
    for group, cfg, pages, floor in rows:
        runs = results.get(cfg.name, [])
        if not _ok(runs):
            failed = [r for r in runs if r.status != "ok"]
            error = failed[0].error[:80] if failed else "not run"
            lines.append("| %s | %s | %d | %s | | | | | |" % (group, cfg.name, pages, error))
            continue
        ratios = round_ratios(results, cfg.name, floor)
        if not floor:
            ratio = "floor"
        elif ratios:
            ratio = "%.2f" % _median(ratios)
        else:
            ratio = "n/a"
        browser, crawler = _cpu(runs, "server"), _cpu(runs, "crawler")
        other = max(r.other_load_cores or 0.0 for r in runs)
        lines.append(
            "| %s | %s | %d | %.1f | %s | %.2f | %.2f | %.2f | %.2f |"
            % (group, cfg.name, runs[0].pages, _median([r.pages_per_s for r in runs]), ratio,
               browser, crawler, browser + crawler, other)
        )  # fmt: skip
    return lines


def ratio_lines(rows: list[Row], results: Results) -> list[str]:
    """Each row's ratio to its floor in every round."""
    lines = []
    for _group, cfg, _pages, floor in rows:
        ratios = round_ratios(results, cfg.name, floor)
        if ratios:
            each = ", ".join("%.2f" % r for r in ratios)
            lines.append("%s / %s, round by round: %s" % (cfg.name, floor, each))
    return ["", *lines] if lines else []


def crawler_budget(results: Results) -> list[str]:
    """Where the plugin's crawler CPU per page goes on Lightpanda: the raw
    loop's (its CDP work), Scrapy's own (the floor), and the rest (the
    plugin's own Python and its extra messages); medians over the rounds."""
    names = ("raw_cdp_loop", "plugin_defaults", SCRAPY_FLOOR)
    if not all(_ok(results.get(n)) for n in names):
        return []
    raw, plugin, scrapy = (_cpu(results[n], "crawler") for n in names)
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
    ap.add_argument(
        "--rounds", type=int, default=2, help="runs of every row, alternated (medians reported)"
    )
    ap.add_argument("--site", type=Path, default=default_site())
    ap.add_argument("--out", type=Path, default=HERE / "QUICK.md")
    a = ap.parse_args(argv)
    for option, value in (
        ("--rounds", a.rounds),
        ("--lightpanda-pages", a.lightpanda_pages),
        ("--chromium-pages", a.chromium_pages),
    ):
        if value < 1:
            ap.error("%s: at least 1 (got %d)" % (option, value))
    if not a.site.is_file():
        ap.error("--site: no such file: %s (the benchmark site's server.py)" % a.site)
    if not a.out.parent.is_dir():
        ap.error("--out: no such directory: %s" % a.out.parent)
    procs.interrupt_on_sigterm()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-quick-"))
    rows = plan(a)
    site = procs.start_benchsite(a.site, log_dir)
    results: Results = {}
    t0 = time.monotonic()
    try:
        most = max(a.lightpanda_pages, a.chromium_pages)
        procs.warm_benchsite(site, [*page_urls("", KIND, most), warmup_url("", KIND, most)])
        for run in range(1, a.rounds + 1):
            for _group, cfg, pages, _floor in rows:
                measure.wait_quiet(5)
                r = execute.run_config(
                    cfg, KIND, run, site=site, pages=pages, log_dir=log_dir, timeout_s=90 + pages
                )
                results.setdefault(cfg.name, []).append(r)
                done = "%.1f pages/s" % r.pages_per_s if r.status == "ok" else r.error[:200]
                print("round %d  %-34s %s" % (run, cfg.name, done), flush=True)
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
        *ratio_lines(rows, results),
        *crawler_budget(results),
    ]
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    a.out.write_text(text)
    print("wrote %s (logs in %s)" % (a.out, log_dir))
    return 0 if all(_ok(runs) for runs in results.values()) else 1


def _machine() -> dict[str, str]:
    import report

    info = report.machine()
    return {"machine": info["machine"], "browsers": info["browsers"]}


if __name__ == "__main__":
    sys.exit(main())
