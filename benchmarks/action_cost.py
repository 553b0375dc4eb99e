"""What a page action costs in the page (not run by the tests).

    python -m pytest -q -s -p tests.conftest benchmarks/action_cost.py

One rendered request of the test site's ``/act/input`` per backend runs each
action ``N`` times between two ``performance.now()`` readings in the page,
and prints the milliseconds per action: the trusted ``click`` against the
script click it replaced (``el.click()`` by ``evaluate``), ``hover``, ``type``
of 10 characters, ``check`` then ``uncheck``. The machine is shared: read the
figures as orders of magnitude.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

N = 30
NOW = ["evaluate", "performance.now()"]
CASES: list[tuple[str, list[Any]]] = [
    ("trusted click", [["click", "#btn"]]),
    ("script click", [["evaluate", "document.getElementById('btn').click()"]]),
    ("hover", [["hover", "#hov"]]),
    ("type 10 characters", [["type", "#txt", "abcdefghij"]]),
    ("check + uncheck (per action)", [["check", "#cb"], ["uncheck", "#cb"]]),
]


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_action_cost(site: SiteServer, browser: str) -> None:
    actions: list[Any] = []
    for _, steps in CASES:
        actions += [NOW, *steps * (N // len(steps)), NOW]
    spider, _ = await crawl(
        [scrapy.Request(site.url("/act/input?bench"),
                        meta={"cdp": True, "cdp_actions": actions})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_ACTION_TIMEOUT_SECONDS": 30},
    )  # fmt: skip
    assert not spider.failures, spider.failures[0].value
    clock = [r for r in spider.responses[0].meta["cdp_results"] if isinstance(r, (int, float))]
    for i, (name, _) in enumerate(CASES):
        print(f"{browser}: {name}: {(clock[2 * i + 1] - clock[2 * i]) / N:.1f} ms")
