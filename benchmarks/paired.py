"""Paired runs of the plugin at its defaults from two (or more) source trees,
alternated on one binary (not run by the tests): what a change costs or saves
a page, with the machine's other load falling on every tree alike.

    python benchmarks/paired.py /tmp/base,. [--rounds 2] [--pages 60] \\
        [--browser chromium] [--chromium-path /usr/lib/chromium/chromium-headless-shell] \\
        [--fresh-contexts]

Each tree is a checkout of this project (``git archive <commit> | tar -x -C
/tmp/base``); its runs import ``scrapy_cdp_pool`` from it (``PYTHONPATH``).
Per round, each tree in turn crawls ``/products`` of the benchmark site
(``benchmarks/runners/run_cdp_pool.py --defaults``, as ``quick.py``'s
plugin rows); printed per run: pages/s, the browser's and the crawler's CPU
ms a page and the other load in cores, then each tree's means. Wrap it in
``flock /tmp/quick-bench.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import execute  # noqa: E402
import measure  # noqa: E402
import procs  # noqa: E402
from configs import Config  # noqa: E402
from run import default_site  # noqa: E402

sys.path.insert(0, str(HERE / "runners"))
from _common import page_urls, warmup_url  # noqa: E402

KIND = "products"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("trees", help="comma-separated source trees, run in this order each round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--browser", default="chromium", choices=("chromium", "lightpanda"))
    ap.add_argument("--chromium-path", default=procs.CHROMIUM_SHELL)
    ap.add_argument("--fresh-contexts", action="store_true", help="CDP_POOL_REUSE_PAGES = False")
    a = ap.parse_args(argv)
    trees = [str(Path(t).resolve()) for t in a.trees.split(",")]
    args = ["--defaults", "--browser", a.browser]
    if a.browser == "chromium":
        args += ["--chromium-path", a.chromium_path]
    if a.fresh_contexts:
        args.append("--fresh-contexts")
    cfg = Config("plugin_defaults", "cdp_pool", args=tuple(args))
    procs.interrupt_on_sigterm()
    log_dir = Path(tempfile.mkdtemp(prefix="bench-paired-"))
    site = procs.start_benchsite(default_site(), log_dir)
    runs: dict[str, list[execute.RunResult]] = {t: [] for t in trees}
    try:
        procs.warm_benchsite(site, [*page_urls("", KIND, a.pages), warmup_url("", KIND, a.pages)])
        for round_ in range(a.rounds):
            for tree in trees:
                os.environ["PYTHONPATH"] = tree
                measure.wait_quiet(5)
                r = execute.run_config(
                    cfg, KIND, round_, site=site, pages=a.pages, log_dir=log_dir,
                    timeout_s=90 + a.pages,
                )  # fmt: skip
                runs[tree].append(r)
                print(_line("round %d" % round_, tree, [r]), flush=True)
    except KeyboardInterrupt:
        print("interrupted: reporting the runs so far", flush=True)
    finally:
        procs.stop(site)
    print()
    for tree in trees:
        print(_line("mean", tree, runs[tree]))
    return 0 if all(r.status == "ok" for rs in runs.values() for r in rs) else 1


def _line(label: str, tree: str, runs: list[execute.RunResult]) -> str:
    ok = [r for r in runs if r.status == "ok"]
    if not ok:
        return "%-8s %s: no run ok (%s)" % (label, tree, runs[-1].error[:200] if runs else "")

    def mean(values: list[float]) -> float:
        return statistics.fmean(values)

    return "%-8s %s: %.2f pages/s, CPU ms a page browser %.1f crawler %.1f, other load %.2f" % (
        label,
        tree,
        mean([r.pages_per_s for r in ok]),
        mean([r.cpu_ms_per_page.get("server", 0.0) for r in ok]),
        mean([r.cpu_ms_per_page.get("crawler", 0.0) for r in ok]),
        mean([r.other_load_cores or 0.0 for r in ok]),
    )


if __name__ == "__main__":
    sys.exit(main())
