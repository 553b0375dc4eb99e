"""Aggregate the runs (median pages/s, median CPU, highest peak memory), print the table and
write benchmarks/RESULTS.md with the machine, the versions and the date."""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import importlib.metadata
import json
import os
import platform
import statistics
import sys
from pathlib import Path

import configs
import measure
import procs
from configs import Config
from execute import RunResult

# The targets on /products: (subject, reference(s), minimum ratio): issue 7's,
# then issue 19's for a new user's crawl (the plugin at its defaults)
TARGETS = [
    ("cdp_pool_lightpanda", ("raw_cdp_loop",), 0.85),
    ("cdp_pool_lightpanda", ("raw_playwright_pool",), 2.0),
    ("cdp_pool_lightpanda", ("scrapy_playwright_lightpanda_*",), 5.0),
    ("cdp_pool_lightpanda_defaults", ("raw_cdp_loop",), 0.85),
    ("cdp_pool_lightpanda_defaults", ("raw_playwright_pool",), 2.5),
    ("cdp_pool_lightpanda_defaults", ("scrapy_playwright_lightpanda_*",), 8.0),
    ("cdp_pool_chromium", ("scrapy_playwright_chromium_tuned",), 1.5),
    ("cdp_pool_chromium_tuned", ("scrapy_playwright_chromium_tuned",), 1.5),
]


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import psutil

        mem = "%.1f GB" % (psutil.virtual_memory().total / 1e9)
    except ImportError:
        mem = "unknown"
    versions = {}
    for dist in (
        "scrapy",
        "playwright",
        "scrapy-playwright",
        "lightpanda",
        "websockets",
        "twisted",
        "psutil",
        "scrapy-cdp-pool",
    ):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": "%s, %s cores, %s RAM, %s" % (cpu, os.cpu_count(), mem, platform.platform()),
        "python": platform.python_version(),
        "versions": ", ".join("%s %s" % kv for kv in versions.items()),
        "browsers": "Lightpanda %s (binary), %s"
        % (procs.lightpanda_version(), procs.chromium_version()),
    }


def aggregate(results: list[RunResult], configs: list[Config], kinds: list[str]) -> list[dict]:
    rows = []
    for kind in kinds:
        for cfg in configs:
            runs = [r for r in results if r.config == cfg.name and r.kind == kind]
            good = [r for r in runs if r.status == "ok"]
            # Speed and CPU from the runs the rest of the machine left alone, when there are any
            quiet = [r for r in good if (r.other_load_cores or 0.0) < measure.QUIET_CORES]
            row: dict = {
                "config": cfg.name,
                "kind": kind,
                "peer": cfg.peer,
                "baseline": cfg.baseline,
                "runs": "%d/%d" % (len(quiet), len(good)),
                "note": cfg.note,
            }
            if not good:
                row["status"] = "%s: %s" % (runs[0].status, runs[0].error) if runs else "not run"
                rows.append(row)
                continue
            row["status"] = "ok"
            pages = sum(r.pages for r in good)
            picked = quiet or good
            row["pps"] = statistics.median(r.pages_per_s for r in picked)
            if all(r.valid is not None for r in good):
                row["valid"] = "%d/%d" % (sum(r.valid or 0 for r in good), pages)
            else:
                row["valid"] = "n/a (HTTP 200: %d/%d)" % (sum(r.ok for r in good), pages)
            row["cpu"] = {
                c: statistics.median(r.cpu_ms_per_page.get(c, 0.0) for r in picked)
                for c in ("server", "crawler", "driver", "site")
            }
            loads = [r.other_load_cores for r in picked if r.other_load_cores is not None]
            row["other_load"] = statistics.median(loads) if loads else None
            row["rss"] = {
                c: max(r.peak_rss_mb.get(c, 0.0) for r in good)
                for c in ("server", "crawler", "driver")
            }
            pss = [r.peak_pss_mb for r in good if r.peak_pss_mb.get("server") is not None]
            row["pss"] = (
                {c: max(p[c] for p in pss) for c in ("server", "crawler", "driver")}
                if pss
                else None
            )
            rows.append(row)
    for kind in kinds:
        mine = [r for r in rows if r["kind"] == kind and r["status"] == "ok"]
        base = next((r["pps"] for r in mine if r["baseline"]), None)
        peers = [r["pps"] for r in mine if r["peer"]]
        best = max(peers) if peers else None
        for r in mine:
            r["x_plain"] = r["pps"] / base if base else None
            r["x_peer"] = r["pps"] / best if best else None
    return rows


def _f(v: float | None, fmt: str = "%.1f") -> str:
    return "-" if v is None else fmt % v


def table(rows: list[dict]) -> str:
    head = (
        "| config | page | pages/s (median) | quiet/ok runs | valid | x plain Scrapy | x best peer "
        "| CPU ms/page server | crawler | driver | total | site | peak RSS MB server "
        "| crawler | driver | peak PSS MB server | crawler+driver | other load (cores) |"
    )
    out = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        if r["status"] != "ok":
            status = r["status"].replace("|", "/").replace("\n", " ")
            out.append("| %s | %s | %s |%s" % (r["config"], r["kind"], status[:300], " |" * 15))
            continue
        cpu, rss, pss = r["cpu"], r["rss"], r["pss"]
        cells = [
            r["config"],
            r["kind"],
            "%.1f" % r["pps"],
            r["runs"],
            r["valid"],
            _f(r["x_plain"], "%.3f"),
            _f(r["x_peer"], "%.2f"),
            _f(cpu["server"]),
            _f(cpu["crawler"]),
            _f(cpu["driver"]),
            _f(cpu["server"] + cpu["crawler"] + cpu["driver"]),
            _f(cpu["site"]),
            _f(rss["server"], "%.0f"),
            _f(rss["crawler"], "%.0f"),
            _f(rss["driver"], "%.0f"),
            _f(pss["server"], "%.0f") if pss else "-",
            _f(pss["crawler"] + pss["driver"], "%.0f") if pss else "-",
            _f(r["other_load"], "%.2f"),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def targets(rows: list[dict]) -> str:
    ok = {r["config"]: r for r in rows if r["kind"] == "products" and r["status"] == "ok"}
    out = ["| subject | reference | ratio | target | met |", "|---|---|---|---|---|"]
    for subject, refs, minimum in TARGETS:
        for subj in (subject, subject + "_ext"):
            ref_rows = [r for name, r in ok.items() if any(fnmatch.fnmatch(name, p) for p in refs)]
            ref = max(ref_rows, key=lambda r: r["pps"]) if ref_rows else None
            if subj not in ok or ref is None:
                out.append(
                    "| %s | %s | n/a | >= %.2f | not measured |" % (subj, "/".join(refs), minimum)
                )
                continue
            ratio = ok[subj]["pps"] / ref["pps"]
            out.append(
                "| %s | %s | %.2f | >= %.2f | %s |"
                % (subj, ref["config"], ratio, minimum, "yes" if ratio >= minimum else "NO")
            )
    return "\n".join(out)


HOW = (
    (
        "Each configuration renders the same N distinct pages of one kind after one warm-up page; "
        "pages/s = N / (time from the first measured request to the last response). `valid` counts "
        "pages whose HTML passes the site's markers."
    ),
    (
        "Configurations are interleaved (run 1: every configuration, run 2: every configuration, "
        "...). pages/s and CPU are medians of the quiet runs (other load under %.1f cores), or "
        "of all successful runs when none was quiet; memory is the highest peak of all runs."
        % measure.QUIET_CORES
    ),
    (
        "CPU ms/page is measured between the runner's start and end marks, per process tree: "
        "server = the browser (an external server's whole tree, or a browser under the crawler), "
        "crawler = the runner's Python process, driver = Playwright's Node process. Peak RSS "
        "is the sum over a category's processes, sampled every 0.2 s over the whole run; PSS "
        "every 1 s."
    ),
    (
        "CPU `total` is server + crawler + driver; `site` is the benchmark site's own CPU (the "
        "origin, the same work for every configuration, not in the total)."
    ),
    (
        "`other load`: cores kept busy during the window by processes outside the measured trees "
        "(the machine's busy time minus the trees and the harness), median of the runs used. "
        "A high value means another job competed for the CPU and that row's figures are low."
    ),
    "x best peer: peers are the scrapy-playwright configurations and raw_playwright_pool.",
)


def markdown(rows: list[dict], info: dict[str, str], command: str, notes: list[str]) -> str:
    parts = [
        "# Benchmark results",
        "",
        "Generated by `%s` on %s." % (command, info["date"]),
        "",
        "- Machine: %s" % info["machine"],
        "- Python %s; %s" % (info["python"], info["versions"]),
        "- Browsers: %s" % info["browsers"],
        "",
        table(rows),
        "",
        "## Targets from issue 7 (`/products`, ratios of median pages/s)",
        "",
        targets(rows),
        "",
        "## How it is measured",
        "",
        *("- " + h for h in HOW),
    ]
    if notes:
        parts += ["", "## Notes", ""] + ["- " + n for n in notes]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Re-aggregate the raw runs of a RESULTS.json and print the table and the targets."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("results_json", type=Path)
    a = ap.parse_args(argv)
    raw = json.loads(a.results_json.read_text())
    results = [RunResult(**r) for r in raw["runs"]]
    rows = aggregate(results, configs.build(raw["connections"]), raw["kinds"])
    print(table([r for r in rows if r["status"] != "not run"]))
    print()
    print(targets(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
