"""Issue 14's page behaviours on the embedded Lightpanda, and what it cannot
do, named before any page opens."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import ActionUnsupported, NavigationToOtherScheme
from tests.behaviour import DISMISSED, BehaviourContract
from tests.contract import token
from tests.crawl import crawl
from tests.profiles import hits
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

LIGHTPANDA = {"CDP_POOL_BROWSER": "lightpanda"}


class TestLightpandaBehaviour(BehaviourContract):
    def backend_settings(self) -> dict[str, Any]:
        return LIGHTPANDA


@pytest_twisted.ensureDeferred
async def test_accepting_dialogs_is_not_honoured_and_says_so(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Lightpanda dismisses dialogs itself: 'accept' is reported as not
    done, with one warning."""
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/behaviour/dialogs?{token()}&i={i}"), meta={"cdp": True})
         for i in range(2)],
        {**LIGHTPANDA, "CDP_POOL_DIALOGS": "accept"},
    )  # fmt: skip
    assert [r.meta["cdp_dialogs_seen"] for r in spider.responses] == [DISMISSED, DISMISSED]
    warnings = [r for r in caplog.records if "not honoured" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING


@pytest_twisted.ensureDeferred
async def test_a_page_that_leaves_for_a_file_url_fails_by_name_at_once(site: SiteServer) -> None:
    """Lightpanda replaces the document with an empty ``file:`` one (before:
    the render hung). Left while loading: a named error, not retried. Left
    from a load handler: the http page if it was read first, else the same
    error; never a timeout."""
    key = token()
    inline = f"/behaviour/scheme?to=file:///etc/hostname&when=inline&k={key}"
    on_load = f"/behaviour/scheme?to=file:///etc/hostname&when=load&k={key}"
    spider, _ = await crawl(
        [scrapy.Request(site.url(inline), meta={"cdp": True}),
         scrapy.Request(site.url(on_load), meta={"cdp": True})],
        {**LIGHTPANDA, "RETRY_ENABLED": True, "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 60,
         "DOWNLOAD_TIMEOUT": 10},
    )  # fmt: skip
    assert len(spider.failures) + len(spider.responses) == 2
    failed = {f.request.url: f.value for f in spider.failures}
    error = failed[site.url(inline)]
    assert isinstance(error, NavigationToOtherScheme), error
    assert "file:///etc/hostname" in str(error)
    assert hits(site, inline) == 1  # not retried
    if site.url(on_load) in failed:
        assert isinstance(failed[site.url(on_load)], NavigationToOtherScheme)
    else:
        page = spider.by_url("when=load")
        assert page.css("#here::text").get() == "here"
        assert page.meta["cdp_ignored_navigations"] == ["file:///etc/hostname"]


@pytest_twisted.ensureDeferred
async def test_a_page_replaced_for_a_file_url_before_it_is_read_fails_by_name(
    site: SiteServer,
) -> None:
    """A meta refresh to ``file:`` that Lightpanda follows while an action
    waits: the page read afterwards is Lightpanda's own "Navigation failed"
    page. Found by a fresh-user trial: it was returned as the site's page,
    status 200 (fails before)."""
    url = f"/behaviour/scheme?to=file:///etc/hostname&when=meta&k={token()}"
    spider, _ = await crawl(
        [scrapy.Request(site.url(url), meta={"cdp": True,
                                             "cdp_actions": [["wait_for_timeout", 300]]})],
        LIGHTPANDA,
    )  # fmt: skip
    assert not spider.responses, spider.responses[0].text
    error = spider.failures[0].value
    assert isinstance(error, NavigationToOtherScheme), error
    assert "file:///etc/hostname" in str(error)


@pytest.mark.parametrize(
    "action",
    [["scroll_to_bottom"], ["screenshot", {"type": "jpeg"}]],
    ids=["scroll", "jpeg"],
)
@pytest_twisted.ensureDeferred
async def test_what_lightpanda_cannot_do_fails_by_name_before_the_page_opens(
    site: SiteServer, action: list[Any]
) -> None:
    key = token()
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/behaviour/infinite-scroll?{key}"),
                        meta={"cdp": True, "cdp_actions": [action]}),
         scrapy.Request(site.url(f"/js?beside-unsupported={key}"), meta={"cdp": True})],
        {**LIGHTPANDA, "RETRY_ENABLED": True},
    )  # fmt: skip
    assert [r.url for r in spider.responses] == [site.url(f"/js?beside-unsupported={key}")]
    [failure] = spider.failures
    assert isinstance(failure.value, ActionUnsupported), failure.value
    assert "Chromium" in str(failure.value)
    assert action[0] in str(failure.value)
    assert hits(site, f"/behaviour/infinite-scroll?{key}") == 0  # never opened, never retried
    assert crawler.stats.get_value("cdp_pool/errors/ActionUnsupported") == 1
