"""What the test site's fault routes saw (``/fault-records``, see
``tests/site/faults.py``), and the check of a rate-limit storm against it.

:func:`storm_violations` is the one check of the storm tests (one process:
``tests/test_resilience_storm.py``; cluster workers:
``tests/test_cluster_crawl.py`` and ``tests/test_cluster_latency.py``), all
times on one clock (``time.monotonic()`` is system-wide on Linux)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.servers import SiteServer


def records(site: SiteServer, key: str) -> dict[str, Any]:
    """The site's records of key ``key`` (``arrivals``, ``labels``,
    ``windows``, ``window_end``, ``in_flight_max``)."""
    with urllib.request.urlopen(site.url(f"/fault-records?key={key}"), timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
        return data


def storm_violations(
    seen: dict[str, Any], url: str, started: dict[str, float], known: dict[str, float]
) -> tuple[list[str], list[str]]:
    """The pages of a ``/storm`` crawl (URLs ``url`` + the ``i`` label, each
    fetched once) that broke a 429's pause: ``(started_inside,
    unexplained)``, each sorted.

    - ``started``: page URL -> when its navigation passed its last pause
      check (or started);
    - ``known``: the URL of each 429 -> when the crawler knew of its pause.

    Each window the site announced is checked against its own 429 (matched
    by URL): another window's pause known earlier may end first, and a 429
    that reaches the crawler late cannot be acted on sooner.
    ``started_inside``: pages started after a window's 429 was known and
    before the window ended; ``unexplained``: pages that arrived inside a
    window from a navigation started once its 429 was known.

    :raises KeyError: a window's 429 is missing from ``known``, or an arrival
        from ``started``."""
    page_at = {
        t: f"{url}{label}" for t, label in zip(seen["arrivals"], seen["labels"], strict=True)
    }
    windows = [(start, end, known[page_at[start]]) for start, end in seen["windows"]]
    started_inside = {page for _, end, at in windows for page, t in started.items() if at < t < end}
    unexplained = {
        page for start, end, at in windows
        for arrival, page in page_at.items() if start < arrival < end and started[page] >= at
    }  # fmt: skip
    return sorted(started_inside), sorted(unexplained)
