"""The crawler's memory and exit against a malicious CDP endpoint (not run by
the tests; the tests assert the same on smaller caps).

    python benchmarks/hostile_endpoint.py [--code DIR] [--cap-mb N] [--deadline 60]

For each mode of ``tests/site/hostile_cdp.py`` (a message that never ends, in
fragments or in one frame; one 100 MB message; a flood of paused requests
nobody answers, for 60 s of navigation timeout; a flood of events that need no
answer; ``/json/version`` dripping one byte a second; an endless
``/json/version``; non-object JSON), one real crawl of one page in its own
process (``tests/hostile_crawl.py``) with ``CDP_POOL_CONNECTIONS = 1``.
Printed per mode: the crawler's peak RSS (``ru_maxrss``, MiB; the process's
address space is capped at 4 GiB), wall seconds until it exited, whether it
exited by itself within ``--deadline`` seconds after its download timeout,
and its failure.

``--code DIR``: the checkout whose ``scrapy_cdp_pool`` the crawl imports
(e.g. an export of the commit before the fix, for "before" figures); the
hostile server and runner are always this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

_LONG = {"CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 60, "DOWNLOAD_TIMEOUT": 70}
MODES: list[tuple[str, list[str], dict[str, Any]]] = [
    ("endless", [], {}),
    ("endless-frame", [], {}),
    ("huge", ["--size-mb", "100"], {}),
    ("flood", [], _LONG),
    ("flood-events", ["--kind", "lightpanda"], _LONG),
    ("drip", [], {"DOWNLOAD_TIMEOUT": 20}),
    ("version-endless", [], {"DOWNLOAD_TIMEOUT": 20}),
    ("not-object", [], {}),
]


def run(mode: str, args: list[str], settings: dict[str, Any], code: Path, deadline: float) -> str:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.site.hostile_cdp", mode, *args],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    endpoint = server.stdout.readline().split()[1]
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{REPO}"}
    timeout = float(settings.get("DOWNLOAD_TIMEOUT", 30)) + deadline
    started = time.monotonic()
    try:
        crawl = subprocess.run(
            [sys.executable, "-m", "tests.hostile_crawl", endpoint, "http://page.test/",
             json.dumps(settings)],
            cwd=code, env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        out, exited = crawl.stdout, "yes"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        exited = f"no (killed after {timeout:g} s)"
    seconds = time.monotonic() - started
    server.terminate()
    server.communicate(timeout=10)
    results = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if not results:
        return f"{mode:16} no result; exited {exited}"
    result = json.loads(results[-1].removeprefix("RESULT "))
    failure = result["failures"][0] if result["failures"] else {"type": "-", "message": ""}
    return (
        f"{mode:16} peak RSS {result['peak_rss_mb']:7.1f} MB  {seconds:5.1f} s  exited {exited:22}"
        f"  {failure['type']}: {failure['message'][:110]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, default=REPO)
    parser.add_argument("--cap-mb", type=float, default=None, help="CDP_POOL_MAX_MESSAGE_MB")
    parser.add_argument("--deadline", type=float, default=60.0)
    options = parser.parse_args()
    for mode, args, settings in MODES:
        if options.cap_mb is not None:
            settings = {**settings, "CDP_POOL_MAX_MESSAGE_MB": options.cap_mb}
        print(run(mode, args, settings, options.code.resolve(), options.deadline), flush=True)


if __name__ == "__main__":
    main()
