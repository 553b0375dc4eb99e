"""The benchmarks still run against the package as it is now.

Not their figures (the tests assert no speed): only that a benchmark the docs
quote starts and finishes, where it can do so in a second or two without a
browser. The others were run by hand at the stop of 2026-12-07 (every script
in ``benchmarks/`` at its smallest size); two had broken silently since the
render layer's restructuring: the two ``--off`` switches below, and
``jobdir_cost.py``'s stand-in engine (the plugin now wakes the engine when a
request finishes).

``benchmarks/quick.py --features`` measures what each default feature costs a
page by switching it off; where a feature has no setting,
``benchmarks/runners/run_cdp_pool.py`` replaces the one call that does its
work. When that call moves (as render/ going private moved the page opening
to ``render/_request/opening.py``) the patch must fail at once, not measure
the defaults under the feature's name. Run in a child process: the patches
replace module attributes for good.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"

#: a probe's first lines: the runner importable as the benchmarks import it
IMPORT_RUNNER = f"""
import sys
sys.path[:0] = [{str(BENCHMARKS / "runners")!r}, {str(REPO)!r}]
import run_cdp_pool
"""


def _python(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """This interpreter run with ``args`` in the repository, its output kept."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO,
    )  # fmt: skip


def test_every_feature_switch_patches_a_call_the_render_path_makes() -> None:
    done = _python("-c", IMPORT_RUNNER + """
for name in run_cdp_pool.FEATURES:
    run_cdp_pool.patch_off(name)
print(sorted(run_cdp_pool.FEATURES))
""")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cache_guard" in done.stdout
    assert "network_events" in done.stdout


def test_a_patch_of_a_call_that_moved_fails_by_name() -> None:
    done = _python("-c", IMPORT_RUNNER + """
import types
async def opened(spec): ...
module = types.ModuleType("opening")
module.open_page = opened
try:
    unguarded = run_cdp_pool._with("guard_cache", False)
    run_cdp_pool._replace(module, "open_page", unguarded, "guard_cache")
except TypeError as e:
    print("refused:", e)
try:
    run_cdp_pool._replace(module, "take_over_page", lambda original: original)
except AttributeError as e:
    print("missing:", e)
""")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: opening.open_page takes no 'guard_cache' argument" in done.stdout
    assert "missing:" in done.stdout
    assert "take_over_page" in done.stdout


def test_the_jobdir_cost_benchmark_drives_the_scheduler_through_a_crawl() -> None:
    """``benchmarks/jobdir_cost.py``'s scheduler path (no ``--crawl``): every
    queue mode it compares hands out all its requests."""
    done = _python(str(BENCHMARKS / "jobdir_cost.py"), "--requests", "30", "--repeat", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    for mode in ("memory (no JOBDIR)", "Scrapy's JOBDIR", "durable JOBDIR + fsync"):
        assert mode in done.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--lightpanda-pages", "0"], "--lightpanda-pages: at least 1"),
        (["--chromium-pages", "-5"], "--chromium-pages: at least 1"),
        (["--rounds", "0"], "--rounds: at least 1"),
        (["--site", "/nonexistent/server.py"], "--site: no such file"),
        (["--out", "/nonexistent-dir/QUICK.md"], "--out: no such directory"),
    ],
)
def test_quick_mode_refuses_bad_input_by_name_before_it_runs(args: list[str], named: str) -> None:
    """Found by a trial as a new user: page counts of 0 or less ran the whole
    benchmark to rows that "did not finish their pages", a missing ``--site``
    gave a traceback, and a missing ``--out`` directory one after the run."""
    done = _python(str(BENCHMARKS / "quick.py"), *args, timeout=60)
    assert done.returncode == 2
    assert named in done.stderr
    assert "Traceback" not in done.stderr
