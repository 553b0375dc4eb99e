"""Issue 14's page behaviours on the embedded Chromium, and what only
Chromium does: accepting dialogs, page reuse (``CDP_POOL_REUSE_PAGES``, on by
default there) as clean as a fresh context, scrolling."""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

import psutil
import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.browser.cdp import CDPConnection
from tests.behaviour import BehaviourContract
from tests.contract import token
from tests.crawl import crawl
from tests.profiles import hits
from tests.servers import SiteServer

#: crawls of equal settings share one embedded server (tests/crawl.py); a test
#: that counts what its own crawler's server did is marked ``own_browser``
SHARED_BROWSERS = True

CHROMIUM = {"CDP_POOL_BROWSER": "chromium"}
#: one slot, one request at a time: every request after the first gets the
#: page the previous one left (page reuse is Chromium's default)
ONE_PAGE = {**CHROMIUM, "CDP_POOL_CONNECTIONS": 1, "CONCURRENT_REQUESTS": 1}


class TestChromiumBehaviour(BehaviourContract):
    def backend_settings(self) -> dict[str, Any]:
        return CHROMIUM

    def check_ignored(self, responses: list[scrapy.http.Response]) -> None:
        for response in responses:
            to = response.url.split("to=")[1].split("&")[0]
            assert response.meta["cdp_ignored_navigations"] == [to]


@pytest_twisted.ensureDeferred
async def test_dialogs_accepted_per_request(site: SiteServer) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/behaviour/dialogs?accept"),
                        meta={"cdp": True, "cdp_dialogs": "accept"})],
        CHROMIUM,
    )  # fmt: skip
    [page] = spider.responses
    assert page.css("#confirm::text").get() == "true"
    assert page.css("#prompt::text").get() == "d"  # the prompt's default text
    assert [d["accepted"] for d in page.meta["cdp_dialogs_seen"]] == [True] * 4


def _chain(site: SiteServer, path: str, count: int, meta: dict[str, Any]) -> scrapy.Request:
    """``count`` renders of ``path``, each sent once the previous answered."""

    def then(spider: Any, response: Any) -> Any:
        left = response.meta["left"] - 1
        if left:
            yield scrapy.Request(site.url(f"{path}&n={left}"),
                                 meta={**meta, "left": left, "then": then})  # fmt: skip

    return scrapy.Request(site.url(f"{path}&n={count}"), meta={**meta, "left": count, "then": then})


@pytest.mark.own_browser  # counts its own crawler's pages or contexts
@pytest_twisted.ensureDeferred
async def test_a_reused_page_keeps_no_storage_of_the_previous_request(site: SiteServer) -> None:
    """Four visits to a page counting them in localStorage, sessionStorage,
    Cache Storage and IndexedDB read 1 each time (before: 1, 2, 3, 4), on
    the one page reused for all four."""
    meta = {"cdp": True, "cdp_actions": [["wait_for_selector", "#done"]]}
    spider, crawler = await crawl([_chain(site, f"/behaviour/visits?{token()}", 4, meta)], ONE_PAGE)
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 4
    for response in spider.responses:
        counts = [response.css(f"#{k}::text").get() for k in ("local", "session", "cache", "idb")]
        assert counts == ["1", "1", "1", "1"], (response.url, counts)
    assert crawler.stats.get_value("cdp_pool/contexts_opened") == 1  # the page was reused


@pytest_twisted.ensureDeferred
async def test_a_service_worker_never_answers_the_next_request(site: SiteServer) -> None:
    """The first visit registers a service worker for the scope; the second
    navigation reaches the server all the same (before: answered by the
    worker, or a timeout)."""
    key = token()
    meta = {"cdp": True, "cdp_actions": [["wait_for_selector", "#done", {"timeout": 10}]]}
    spider, crawler = await crawl([_chain(site, f"/behaviour/sw/page?{key}", 2, meta)], ONE_PAGE)
    assert not spider.failures, spider.failures
    assert [r.css("#from::text").get() for r in spider.responses] == ["server", "server"]
    assert hits(site, f"/behaviour/sw/page?{key}&n=1") == 1
    assert crawler.stats.get_value("cdp_pool/contexts_opened") == 1


@pytest.mark.own_browser  # counts its own crawler's pages or contexts
@pytest_twisted.ensureDeferred
async def test_what_a_page_writes_while_leaving_does_not_reach_the_next_request(
    site: SiteServer,
) -> None:
    """A page writes localStorage and sessionStorage from its ``unload``,
    ``pagehide``, ``visibilitychange`` and ``freeze`` handlers; the next
    request on the same kept page finds both empty: the storage is cleared
    after the previous document is gone, not before (a kept page navigated
    straight to the next URL, or frozen instead of left for
    ``about:blank``, runs those handlers after the clearing: the next request
    read ``["pagehide","unload","visibility-hidden"]``)."""
    spider, crawler = await crawl(
        [_chain(site, f"/behaviour/leaving?{token()}", 3, {"cdp": True})], ONE_PAGE
    )
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 3
    for response in spider.responses:
        seen = [response.css(f"#{k}::text").get() for k in ("local", "session")]
        assert seen == ["[]", "[]"], (response.url, seen)
    assert crawler.stats.get_value("cdp_pool/contexts_opened") == 1  # the page was reused


@pytest.mark.own_browser  # counts its own crawler's pages or contexts
@pytest_twisted.ensureDeferred
async def test_a_kept_page_that_armed_beforeunload_leaves_the_next_request_unharmed(
    site: SiteServer,
) -> None:
    """The first request clicks a button that arms a ``beforeunload``
    handler; the next, unrelated request gets the same kept page and loads,
    first try (before: ``net::ERR_ABORTED``, 4 of 4, hidden by Scrapy's retry:
    the site was hit twice). A fresh context has no handler to run."""
    key = token()
    first = scrapy.Request(
        site.url(f"/act/leave-guard?key={key}"),
        meta={
            "cdp": True,
            "cdp_actions": [["click", "#arm"], ["wait_for_selector", "body[data-armed]"]],
            "then": lambda spider, response: [
                scrapy.Request(site.url(f"/act/form?key={key}"), meta={"cdp": True})
            ],
        },
    )
    spider, crawler = await crawl([first], ONE_PAGE)
    assert not spider.failures, [f.getErrorMessage() for f in spider.failures]
    assert [r.url for r in spider.responses] == [first.url, site.url(f"/act/form?key={key}")]
    assert spider.responses[0].css("body::attr(data-armed)").get() == "1"
    assert hits(site, f"/act/form?key={key}") == 1
    stats = crawler.stats.get_stats()
    assert "retry/count" not in stats, stats.get("retry/reason_count/")
    assert stats["cdp_pool/contexts_opened"] == 1  # the page was kept and reused


def _reports(site: SiteServer, key: str) -> Any:
    """What the page's frames posted to ``/act/report?key=``."""
    with urllib.request.urlopen(site.url(f"/act/reports?key={key}"), timeout=10) as answer:
        return json.loads(answer.read())


@pytest.mark.own_browser  # counts its own crawler's pages or contexts
@pytest_twisted.ensureDeferred
async def test_a_page_with_a_frame_of_another_site_is_not_kept(site: SiteServer) -> None:
    """A cross-site iframe's storage is partitioned by the top-level site, out
    of reach of the clearing by origin: before, its counters read 1, 2, 3 over
    three requests on a kept page. Such a page is now closed with its context,
    and each request's frame starts empty."""
    key = token()
    spider, crawler = await crawl(
        [_chain(site, f"/behaviour/framed?key={key}", 3, {"cdp": True})], ONE_PAGE
    )
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 3
    assert _reports(site, key) == [[1, 1], [1, 1], [1, 1]]
    assert crawler.stats.get_value("cdp_pool/contexts_opened") == 3  # not kept


@pytest_twisted.ensureDeferred
async def test_a_kept_page_runs_nothing_between_requests(site: SiteServer) -> None:
    """A page whose timer fetches every 20 ms is kept for reuse; while the
    crawl then waits 400 ms on a plain (unrendered) request, the site gets
    no tick (before: ~20)."""
    key = token()

    def then(spider: Any, response: Any) -> Any:
        yield scrapy.Request(site.url(f"/behaviour/ticks-while-idle?key={key}&ms=400"),
                             meta={"cdp": False})  # fmt: skip

    spider, _crawler = await crawl(
        [scrapy.Request(site.url(f"/behaviour/ticker?key={key}"),
                        meta={"cdp": True, "then": then,
                              "cdp_actions": [["wait_for_timeout", 100]]})],
        ONE_PAGE,
    )  # fmt: skip
    assert not spider.failures, spider.failures
    ticked = [u for u in site.stats()["hits_by_url"] if u.startswith(f"/behaviour/tick?key={key}")]
    assert ticked  # it did tick while rendered
    assert spider.by_url("/behaviour/ticks-while-idle").json() == {"ticks": 0}


@pytest_twisted.ensureDeferred
async def test_scrolling_loads_more_on_chromium(site: SiteServer) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/behaviour/infinite-scroll"), meta={"cdp": True, "cdp_actions": [
            ["scroll_to_bottom"], ["wait_for_selector", ".card:nth-child(10)"],
        ]})],
        CHROMIUM,
    )  # fmt: skip
    assert not spider.failures, spider.failures
    assert len(spider.responses[0].css(".card")) >= 10


@pytest.mark.own_browser  # counts its own crawler's pages or contexts
@pytest_twisted.ensureDeferred
async def test_a_kept_page_is_rearmed_only_with_what_changed(
    site: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three requests on the one kept page: the interception and user agent
    are sent once while unchanged, again when a request's headers must be
    rewritten at the request stage (before: each request sent both). The commands are counted on
    the real connection (a recording wrapper, nothing answered for it)."""
    sent: list[str] = []
    post = CDPConnection.post

    def recording(self: CDPConnection, method: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(method)
        return post(self, method, *args, **kwargs)

    monkeypatch.setattr(CDPConnection, "post", recording)
    key = token()

    def then(spider: Any, response: Any) -> Any:
        left = response.meta["left"] - 1
        if left:
            meta = {"cdp": True, "left": left, "then": then}
            headers = {"X-Speed": "1"} if left == 1 else None
            url = site.url(f"/behaviour/visits?{key}&n={left}")
            yield scrapy.Request(url, meta=meta, headers=headers)

    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/behaviour/visits?{key}&n=3"),
                        meta={"cdp": True, "left": 3, "then": then})],
        ONE_PAGE,
    )  # fmt: skip
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 3
    assert crawler.stats.get_value("cdp_pool/contexts_opened") == 1  # one page for all three
    assert sent.count("Fetch.enable") == 2  # the first page's, then the header rewriting
    assert sent.count("Emulation.setUserAgentOverride") == 1


@pytest_twisted.ensureDeferred
async def test_pages_on_several_connections_start_no_renderer_per_page(site: SiteServer) -> None:
    """15 pages on 3 connections (one browser context each) start fewer
    renderers than pages, not one or more per page: Chromium's spare
    renderer, made for the context that navigated last and thrown away by a
    navigation in another, is off (before: 1-1.7 renderers started per page).
    Renderer processes are listed every 20 ms while the crawl runs; one that
    lived less than that may be missed, which can only lower the count."""
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        me = psutil.Process()
        while not done.is_set():
            for child in me.children(recursive=True):
                try:
                    if "--type=renderer" in child.cmdline():
                        seen.add(child.pid)
                except psutil.Error:
                    continue
            done.wait(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    settings = {**CHROMIUM, "CDP_POOL_CONNECTIONS": 3, "CONCURRENT_REQUESTS": 6}
    try:
        spider, _ = await crawl(
            [scrapy.Request(site.url(f"/product/{i}"), meta={"cdp": True}) for i in range(1, 16)],
            settings,
        )
    finally:
        done.set()
        watcher.join()
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 15
    # 8 measured on Chromium 156 (27-37 with the spare renderer): fewer than the pages
    assert len(seen) < len(spider.responses), sorted(seen)


@pytest.mark.parametrize("reuse", [True, False], ids=["kept pages", "fresh contexts"])
@pytest_twisted.ensureDeferred
async def test_chromium_asks_no_site_for_a_favicon(reuse: bool) -> None:
    """Found by a fresh-user trial: Chromium fetched ``/favicon.ico`` after
    each rendered page, a request the spider never made, that plain Scrapy
    does not send (cookies, proxy, robots.txt all skipped). It is now failed
    before it leaves (``cdp_pool/favicon_requests_blocked``). Its own site:
    the hit count is this test's alone. On ``/usr/bin/chromium``: the headless
    shell (the default binary where installed) asks for no favicon at all
    (measured on 156: 0 asked in 4 kept pages; see the next test)."""
    own = SiteServer()
    try:
        requests = [scrapy.Request(own.url(f"/js?n=1&icon={i}"), meta={"cdp": True})
                    for i in range(4)]  # fmt: skip
        spider, crawler = await crawl(
            requests,
            {**CHROMIUM, "CDP_POOL_REUSE_PAGES": reuse, "CDP_POOL_CONNECTIONS": 1,
             "CDP_POOL_CHROMIUM_PATH": "/usr/bin/chromium"},
        )  # fmt: skip
        assert len(spider.responses) == 4
        # A favicon request Chromium starts just as a fresh context is disposed
        # is past the page's session: the browser session's pattern fails it
        # (it reached the site once or twice in 4 pages before, in full suite
        # runs). A kept page stays open: its own pattern fails it.
        assert hits(own, "/favicon.ico") == 0
        # The browser did ask (so the test can fail): each page's icon, once.
        # A kept page always asks; a fresh context may be closed before its
        # page asks at all (once in a fresh-clone CI run: 0 asked, 0 left),
        # and then there is nothing to check.
        blocked = crawler.stats.get_value("cdp_pool/favicon_requests_blocked", 0)
        if not reuse and blocked == 0:
            pytest.skip("no page asked for a favicon before its context was closed")
        assert blocked >= 1
    finally:
        own.stop()


@pytest_twisted.ensureDeferred
async def test_the_default_chromium_asks_no_site_for_a_favicon() -> None:
    """The default binary (the headless shell where installed, else
    ``/usr/bin/chromium``, whose favicon requests are failed in the browser):
    no ``/favicon.ico`` reaches the site over four kept pages."""
    own = SiteServer()
    try:
        requests = [scrapy.Request(own.url(f"/js?n=1&icon={i}"), meta={"cdp": True})
                    for i in range(4)]  # fmt: skip
        spider, _ = await crawl(requests, {**CHROMIUM, "CDP_POOL_CONNECTIONS": 1})
        assert len(spider.responses) == 4
        assert hits(own, "/favicon.ico") == 0
    finally:
        own.stop()
