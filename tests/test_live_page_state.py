"""What the live page (``meta["cdp_include_page"]``) did, kept and shown, on
both embedded backends: a profile's state saved when the callback closes the
page; ``page.context.storage_state()`` with the page's localStorage, in the
shape real Playwright gives on Chromium; ``page.context.close()`` closing the
page, and doing nothing once it is closed; a page in the meta of another
request (``meta=response.meta``): dropped when closed, refused through the
request's errback when open, never at the cost of the callback's output."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.errors import InvalidRequestMeta
from tests.crawl import RecordingSpider, crawl
from tests.profiles import profile_stats, token, write_profile
from tests.servers import SiteServer

BACKENDS = ["lightpanda", "chromium"]
# what the callbacks do to the page after its response
AFTER = "localStorage.setItem('after', 'callback'); document.cookie = 'late=1; path=/'"


def _live(url: str, **meta: Any) -> scrapy.Request:
    return scrapy.Request(url, meta={"cdp": True, "cdp_include_page": True, **meta})


def _items(entries: list[dict[str, str]]) -> list[tuple[str, str]]:
    return sorted((e["name"], e["value"]) for e in entries)


class ClosingSpider(RecordingSpider):
    """Changes the page's localStorage and cookies, then closes it: itself,
    or leaves it to the plugin at the deadline or the crawl's end
    (``meta["closed_by"]``)."""

    async def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        page = response.meta["cdp_page"]
        await page.evaluate(AFTER)
        if response.meta["closed_by"] == "callback":
            await page.close()
        elif response.meta["closed_by"] == "deadline":
            await page.wait_for_event("close", timeout=0)  # the plugin's, at download_timeout
        return
        yield


@pytest.mark.parametrize("closed_by", ["callback", "deadline", "crawl's end"])
@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_live_page_saves_its_profile_s_state_when_closed(
    site: SiteServer, tmp_path: Path, browser: str, closed_by: str
) -> None:
    name = f"live-{token()}"
    path = write_profile(tmp_path, name, session=f"valid-{name}",
                         local_storage={"http://other.test": {"keep": "me"}})  # fmt: skip
    spider, crawler = await crawl(
        [
            _live(
                site.url(f"/local-storage?set=seen:{name}"),
                cdp_profile=name,
                closed_by=closed_by,
                # the deadline case waits for it: 6 s (15 before) covers the
                # render and Playwright's connection (~1 s quiet) on a loaded machine
                download_timeout=6,
            )
        ],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_PROFILE_SAVE_STATE": True},
        spider_cls=ClosingSpider,
    )  # fmt: skip
    # Before: the render closed the page to read the state, and the request
    # failed ("Target.detachFromTarget failed", or "Playwright could not
    # connect to the live page").
    assert not spider.failures, spider.failures
    state = json.loads(path.read_text())
    cookies = {c["name"]: c["value"] for c in state["cookies"]}
    assert cookies == {"session": f"valid-{name}", "late": "1"}  # the callback's cookie too
    origins = {o["origin"]: _items(o["localStorage"]) for o in state["origins"]}
    assert origins == {
        "http://other.test": [("keep", "me")],
        site.base: [("after", "callback"), ("seen", name)],  # the render's and the callback's
    }
    stats = crawler.stats.get_stats()
    assert profile_stats(stats, name)["state_saves"] == 1
    assert stats["cdp_pool/live_pages_closed_at_deadline"] == (closed_by == "deadline")


async def _playwright_reference(url: str, storage_state: Path | None) -> Any:
    """``storage_state()`` of real Playwright's own context on /usr/bin/chromium
    (made from ``storage_state``, a profile's file, if given), after the same
    page and the same script."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium")
        try:
            context = await browser.new_context(storage_state=storage_state)
            page = await context.new_page()
            await page.goto(url)
            await page.evaluate(AFTER)
            return await context.storage_state()
        finally:
            await browser.close()


class StateSpider(RecordingSpider):
    state_path: Path
    state: Any = None

    async def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        page = response.meta["cdp_page"]
        await page.evaluate(AFTER)
        self.state = await page.context.storage_state(path=self.state_path)
        await page.close()
        return
        yield


def _shape(state: Any) -> Any:
    """The parts of a ``storageState`` both must agree on."""
    return {
        "keys": sorted(state),
        "cookies": sorted((c["name"], c["value"], sorted(c)) for c in state["cookies"]),
        "origins": sorted(
            (o["origin"], sorted(o), _items(o["localStorage"])) for o in state["origins"]
        ),
    }


@pytest.mark.parametrize("profile", [False, True])
@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_storage_state_of_a_live_page_includes_its_local_storage(
    site: SiteServer, tmp_path: Path, browser: str, profile: bool
) -> None:
    url = site.url("/local-storage?set=seen:state")
    settings: dict[str, Any] = {"CDP_POOL_BROWSER": browser}
    meta: dict[str, Any] = {}
    path = None
    if profile:  # a session cookie, and localStorage of an origin the page never visits
        name = f"state-{token()}"
        path = write_profile(tmp_path, name, session=f"valid-{name}",
                             local_storage={"http://other.test": {"keep": "me"}})  # fmt: skip
        settings["CDP_POOL_PROFILES_DIR"] = str(tmp_path)
        meta["cdp_profile"] = name
    reference = await Deferred.fromFuture(asyncio.ensure_future(_playwright_reference(url, path)))
    StateSpider.state_path = tmp_path / "state.json"
    spider, _ = await crawl([_live(url, **meta)], settings, spider_cls=StateSpider)
    assert not spider.failures, spider.failures
    # Before: "origins": [] (Playwright attached to the page after its load
    # and collects localStorage only for origins it saw a navigation to).
    assert _shape(spider.state) == _shape(reference)
    assert len(reference["origins"]) == (2 if profile else 1)
    assert json.loads(StateSpider.state_path.read_text()) == spider.state  # path= as Playwright's


class ContextClosingSpider(RecordingSpider):
    """``page.context.close()``, before or after ``page.close()``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: dict[str, Any] = {}

    async def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        page = response.meta["cdp_page"]
        order = response.meta["order"]
        try:
            if order == "context-first":
                await page.context.close()
                closed = page.is_closed()
                await page.close()
            else:
                await page.close()
                await page.context.close()
                closed = page.is_closed()
            self.seen[order] = ("ok", closed)
        except Exception as e:  # noqa: BLE001 - Playwright's error, compared below
            self.seen[order] = (repr(e), page.is_closed())
        return
        yield


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_context_close_closes_the_live_page_then_does_nothing(
    site: SiteServer, browser: str
) -> None:
    requests = [
        _live(site.url(f"/live/button?key={order}"), order=order)
        for order in ("context-first", "page-first")
    ]
    spider, crawler = await crawl(
        requests, {"CDP_POOL_BROWSER": browser}, spider_cls=ContextClosingSpider
    )
    assert not spider.failures, spider.failures
    # Before: page-first raised "TargetClosedError('BrowserContext.close:
    # Target page, context or browser has been closed')".
    assert spider.seen == {"context-first": ("ok", True), "page-first": ("ok", True)}
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/live_pages"] == 2
    assert stats["cdp_pool/live_pages_closed_at_deadline"] == 0
    assert stats["cdp_pool/contexts_opened"] == stats["cdp_pool/contexts_closed"] == 2


class CopyingSpider(RecordingSpider):
    """scrapy-playwright's documented habit: a follow-up built with
    ``meta=response.meta`` (the page in it), the page closed before
    (``meta["close_first"]``) or after; items before and after it."""

    async def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        if "copied" in response.meta:
            await response.meta["cdp_page"].close()
            return
        page = response.meta["cdp_page"]
        close_first = response.meta["close_first"]
        if close_first:
            await page.close()
        yield {"item": 1, "url": response.url}
        for n in (1, 2):
            yield scrapy.Request(
                response.urljoin(f"/live/button?key=copied-{close_first}-{n}"),
                meta={**response.meta, "copied": n},
                callback=self.parse,
                errback=self.on_error,
                dont_filter=True,
            )
        yield {"item": 2, "url": response.url}
        if not close_first:
            await page.close()


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_copied_meta_with_the_page_costs_the_callback_nothing(
    site: SiteServer, browser: str, caplog: pytest.LogCaptureFixture
) -> None:
    requests = [
        _live(site.url(f"/live/button?key=first-{close_first}"), close_first=close_first)
        for close_first in (True, False)
    ]
    spider, crawler = await crawl(requests, {"CDP_POOL_BROWSER": browser}, spider_cls=CopyingSpider)
    stats = crawler.stats.get_stats()
    # Before: InvalidRequestMeta raised inside the callback's generator: the
    # second item and both follow-ups were lost, with a "Spider error".
    assert stats["item_scraped_count"] == 4
    assert "spider_exceptions/InvalidRequestMeta" not in stats
    assert not [r for r in caplog.records if r.getMessage().startswith("Spider error")]
    # A closed page is dropped from the copies: each is rendered, with a page of its own
    copied = sorted(r.url for r in spider.responses if "copied-True" in r.url)
    assert copied == [site.url(f"/live/button?key=copied-True-{n}") for n in (1, 2)]
    dropped = [r for r in caplog.records if "a live page already closed" in r.getMessage()]
    assert len(dropped) == 1, [r.getMessage() for r in dropped]
    assert dropped[0].levelname == "WARNING"
    assert stats["cdp_pool/live_pages_dropped_from_meta"] == 2
    # An open page is refused where the spider sees it: the request's errback, by name
    refused = sorted(str(f.value) for f in spider.failures)
    assert len(refused) == 2, refused
    for n, message in zip((1, 2), refused, strict=True):
        handed = site.url(f"/live/button?key=copied-False-{n}")
        assert message.startswith(f"<GET {handed}>: meta['cdp_page'] holds a page"), message
    assert all(f.check(InvalidRequestMeta) for f in spider.failures)
    assert not [r for r in spider.responses if "copied-False" in r.url]
    assert stats["cdp_pool/live_pages"] == 4
    assert stats["cdp_pool/live_pages_closed_at_deadline"] == 0
    assert stats["cdp_pool/contexts_opened"] == stats["cdp_pool/contexts_closed"] == 4


class HandingSpider(RecordingSpider):
    """Closes its page (or not: ``meta["keep_open"]``), then yields a request
    that carries it under ``meta["hand_as"]``."""

    async def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        page = response.meta.get("cdp_page")
        if page is None:  # a handed request, rendered without a page
            return
        key = response.meta["hand_as"]
        playwright = {"playwright": True} if key == "playwright_page" else {}
        await page.close()
        yield scrapy.Request(
            response.urljoin(f"/live/button?key=handed-{key}"),
            meta={"cdp": True, **playwright, key: page},
            callback=self.parse,
            errback=self.on_error,
        )


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_closed_live_page_handed_to_another_request_is_dropped_with_a_warning(
    site: SiteServer, browser: str, caplog: pytest.LogCaptureFixture
) -> None:
    requests = [
        _live(site.url(f"/live/button?key={key}"), hand_as=key)
        for key in ("cdp_page", "playwright_page")
    ]
    spider, crawler = await crawl(requests, {"CDP_POOL_BROWSER": browser}, spider_cls=HandingSpider)
    # Before: both handed requests failed inside the callback as spider errors
    handed = [site.url(f"/live/button?key=handed-{key}") for key in ("cdp_page", "playwright_page")]
    assert sorted(r.url for r in spider.responses) == sorted([r.url for r in requests] + handed)
    assert not spider.failures, spider.failures
    warnings = [r for r in caplog.records if "a live page already closed" in r.getMessage()]
    assert len(warnings) == 1
    stats = crawler.stats.get_stats()
    assert "spider_exceptions/InvalidRequestMeta" not in stats
    assert stats["cdp_pool/live_pages_dropped_from_meta"] == 2
    assert stats["cdp_pool/live_pages"] == 2
