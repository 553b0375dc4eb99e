"""Issue 35, item 4: after a fragment navigation (``location.hash`` set), a
script holding the ``window.location`` object reads the old URL on Lightpanda
1.0.2 (``held === location`` is false there, true in Chromium and Playwright):
a hash router such as canjs's lists the wrong todos, silently. A known
Lightpanda limit (docs/backends.md, with the page to report upstream): strict
xfail there, so this starts failing, and gets removed, once it is fixed."""

from __future__ import annotations

import json

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BROWSERS = [
    pytest.param(
        "lightpanda",
        marks=pytest.mark.xfail(
            strict=True,
            reason="Lightpanda 1.0.2: window.location held by a script goes stale after a "
            "fragment navigation (a known limit, docs/backends.md)",
        ),
    ),
    "chromium",
]


@pytest.mark.parametrize("browser", BROWSERS)
@pytest_twisted.ensureDeferred
async def test_a_held_location_follows_a_fragment_navigation(
    site: SiteServer, browser: str
) -> None:
    actions = [["wait_for_function", "() => document.getElementById('out').textContent[0] === '{'"]]
    spider, _ = await crawl(
        [
            scrapy.Request(
                site.url("/hist/held-location"), meta={"cdp": True, "cdp_actions": actions}
            )
        ],
        {"CDP_POOL_BROWSER": browser},
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    seen = json.loads(spider.responses[0].css("#out::text").get())
    assert seen == {"same": True, "held": "#completed", "live": "#completed"}
