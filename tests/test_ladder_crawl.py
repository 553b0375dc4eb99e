"""The render ladder (issue 17) in real crawls: the test site's three kinds
of page (``tests/site/ladder.py``), plain HTTP, the embedded Lightpanda and
the embedded Chromium of the fallback rung.

The Chromium-only kind (``/ladder/canvas/<n>``) builds its list only when a
2D canvas reads back what the page drew on it (``getImageData`` after
``fillRect``): Lightpanda 1.0.2 paints nothing on a canvas, so it returns
that page without its list, and only Chromium gets it right.

Crawls run one request at a time (``CONCURRENT_REQUESTS = 1``) so that which
request of a kind is re-checked is exact: the every-Nth rule of
``ladder/learner.py`` (``floor(k * fraction)`` grows), not a random draw.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.exceptions import DownloadTimeoutError

from scrapy_cdp_pool.errors import ExpectationNotMet
from scrapy_cdp_pool.telemetry.extension import EngineStatusExtension
from tests.crawl import RecordingSpider, crawl
from tests.profiles import token, write_profile
from tests.servers import SiteServer
from tests.site.ladder import item_texts, mixed_kind

EXPECT = {"css": "li.item", "min": 3}
LADDER: dict[str, Any] = {
    "CDP_POOL_RENDER": "auto",
    "CDP_POOL_FALLBACK": "chromium",
    "CDP_POOL_EXPECT": EXPECT,
    "CONCURRENT_REQUESTS": 1,
}


def rendered(site: SiteServer, path: str, **meta: Any) -> scrapy.Request:
    return scrapy.Request(site.url(path), meta={"cdp": True, **meta}, dont_filter=True)


def rungs_tried(response: scrapy.http.Response) -> list[str]:
    return [entry["rung"] for entry in response.meta["cdp_ladder"]]


def items_right(response: scrapy.http.Response) -> bool:
    kind, n = response.url.rsplit("/", 2)[-2:]
    return response.css("li.item::text").getall() == item_texts(kind, int(n))


def beacons(site: SiteServer) -> Counter[str]:
    """Pages a browser rendered, per kind (plain HTTP does not load the beacon)."""
    hits = site.stats()["hits_by_url"]
    return Counter(
        {url.split("kind=")[1]: n for url, n in hits.items() if url.startswith("/ladder/beacon")}
    )


def switch_to(site: SiteServer, mode: str) -> None:
    with urllib.request.urlopen(site.url(f"/ladder/switch-mode?to={mode}"), timeout=10) as r:
        assert json.loads(r.read())["static"] is (mode == "static")


@pytest_twisted.ensureDeferred
async def test_auto_learns_the_cheapest_rung_of_each_kind(site: SiteServer) -> None:
    before = beacons(site)
    pages = 8
    requests = [
        rendered(site, f"/ladder/{kind}/{n}")
        for n in range(1, pages + 1)
        for kind in ("static", "script", "canvas")
    ]
    spider, crawler = await crawl(requests, {**LADDER, "CDP_POOL_RECHECK_FRACTION": 0.25})
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 3 * pages
    assert all(items_right(r) for r in spider.responses)  # every item right
    by_kind: dict[str, list[list[str]]] = {"static": [], "script": [], "canvas": []}
    for response in spider.responses:
        by_kind[response.url.rsplit("/", 2)[-2]].append(rungs_tried(response))
    # static: plain HTTP, never a browser
    assert by_kind["static"] == [["http"]] * pages
    # script: HTTP then Lightpanda for the first page; then Lightpanda
    # straight, but for the re-check (the 4th of the 7 later ones, with 0.25)
    assert Counter(map(tuple, by_kind["script"])) == {("lightpanda",): 6, ("http", "lightpanda"): 2}
    assert by_kind["script"][0] == ["http", "lightpanda"]
    # canvas: the whole ladder once, then Chromium straight, but for the
    # re-check one rung lower (Lightpanda: still incomplete)
    assert by_kind["canvas"][0] == ["http", "lightpanda", "chromium"]
    assert Counter(map(tuple, by_kind["canvas"][1:])) == {
        ("chromium",): 6, ("lightpanda", "chromium"): 1,
    }  # fmt: skip
    canvas = [r for r in spider.responses if "/canvas/" in r.url]
    assert canvas[0].meta["cdp_fallback_reason"] == "lightpanda: incomplete: 'li.item' x3 matched 0"
    assert all(r.meta["cdp_rung"] == "chromium" for r in canvas)
    after = beacons(site)
    assert after["static"] - before["static"] == 0  # no browser touched a static page
    assert after["script"] - before["script"] == pages
    assert after["canvas"] - before["canvas"] == pages + 2  # + Lightpanda twice
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/ladder/served/http"] == pages
    assert stats["cdp_pool/ladder/served/lightpanda"] == pages
    assert stats["cdp_pool/ladder/served/chromium"] == pages
    assert stats["cdp_pool/ladder/rechecks"] == 2
    assert "cdp_pool/ladder/rechecks_met" not in stats
    host = site.url("").split("://")[1]
    assert stats[f"cdp_pool/ladder/learned/{host}/ladder/static/{{n}} parse"] == "http"
    assert stats[f"cdp_pool/ladder/learned/{host}/ladder/script/{{n}} parse"] == "lightpanda"
    assert stats[f"cdp_pool/ladder/learned/{host}/ladder/canvas/{{n}} parse"] == "chromium"
    assert stats["cdp_pool/ladder/changes"] == 3


@pytest_twisted.ensureDeferred
async def test_auto_with_concurrent_requests_gets_every_item_right(site: SiteServer) -> None:
    # Many requests of a kind in flight before the first is learned: which
    # of them climb depends on timing; what holds whatever the order is
    # checked (every item right, static pages never in a browser).
    before = beacons(site)
    requests = [rendered(site, f"/ladder/{mixed_kind(i)}/{i}") for i in range(100, 160)]
    settings = {**LADDER, "CONCURRENT_REQUESTS": 8, "CDP_POOL_CONNECTIONS": 2}
    spider, crawler = await crawl(requests, settings)
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 60
    assert all(items_right(r) for r in spider.responses)
    served = Counter((r.url.rsplit("/", 2)[-2], r.meta["cdp_rung"]) for r in spider.responses)
    assert served == {
        ("static", "http"): 42,
        ("script", "lightpanda"): 12,
        ("canvas", "chromium"): 6,
    }
    assert beacons(site)["static"] == before["static"]
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/ladder/tries/chromium"] == 6  # Chromium only for the canvas pages


@pytest_twisted.ensureDeferred
async def test_a_kind_that_became_static_moves_down_the_ladder(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="scrapy_cdp_pool.ladder")
    switch_to(site, "script")

    def then(n: int) -> Any:
        def follow(spider: RecordingSpider, response: scrapy.http.Response) -> Any:
            if n == 3:
                switch_to(site, "static")  # the site starts serving static HTML
            if n < 6:
                yield rendered(site, f"/ladder/switch/{n + 1}", then=then(n + 1))

        return follow

    try:
        spider, crawler = await crawl(
            [rendered(site, "/ladder/switch/1", then=then(1))],
            {**LADDER, "CDP_POOL_RECHECK_FRACTION": 0.5},
        )
    finally:
        switch_to(site, "script")
    assert not spider.failures, spider.failures
    assert [r.url.rsplit("/", 1)[1] for r in spider.responses] == list("123456")
    assert all(items_right(r) for r in spider.responses)
    # every 2nd later request is a re-check: #3 (still scripted: climbs),
    # #5 (static by then: met on plain HTTP, the kind moves down), then #6 on HTTP
    assert [rungs_tried(r) for r in spider.responses] == [
        ["http", "lightpanda"], ["lightpanda"], ["http", "lightpanda"],
        ["lightpanda"], ["http"], ["http"],
    ]  # fmt: skip
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/ladder/rechecks"] == 2
    assert stats["cdp_pool/ladder/rechecks_met"] == 1
    host = site.url("").split("://")[1]
    assert stats[f"cdp_pool/ladder/learned/{host}/ladder/switch/{{n}} parse"] == "http"
    changes = [r.getMessage() for r in caplog.records if "now starts on" in r.getMessage()]
    kind = f"Render ladder: {host}/ladder/switch/{{n}} parse now starts on"
    assert changes == [  # each change logged
        f"{kind} lightpanda (was unknown: first request)",
        f"{kind} http (was lightpanda: re-check met one rung lower)",
    ]


@pytest_twisted.ensureDeferred
async def test_met_on_no_rung_fails_by_name_with_each_rungs_result(site: SiteServer) -> None:
    spider, crawler = await crawl([rendered(site, "/ladder/empty/1")], LADDER)
    assert not spider.responses
    [failure] = spider.failures
    error = failure.value
    assert isinstance(error, ExpectationNotMet), failure
    assert [r.rung for r in error.results] == ["http", "lightpanda", "chromium"]
    assert all(r.outcome == "incomplete: 'li.item' x3 matched 0" for r in error.results)
    assert "expectation met on no rung" in str(error)
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/ladder/not_met"] == 1
    assert stats[f"cdp_pool/ladder/not_met/{error.kind}"] == 1
    assert stats["cdp_pool/ladder/tries/chromium"] == 1


@pytest_twisted.ensureDeferred
async def test_the_rungs_share_the_requests_download_timeout(site: SiteServer) -> None:
    # Each rung needs at least 1.5 s (the page answers after that); 4 s cannot
    # hold three: the request times out on a rung instead of failing with
    # ExpectationNotMet after all three.
    request = rendered(site, "/ladder/empty/1?ms=1500", download_timeout=4)
    spider, _ = await crawl([request], LADDER)
    [failure] = spider.failures
    assert isinstance(failure.value, DownloadTimeoutError), failure
    shared = "download_timeout = 4 s, shared by the render ladder's rungs, ran out"
    assert shared in str(failure.value)
    ladder = failure.request.meta["cdp_ladder"]
    assert ladder[0]["outcome"] == "incomplete: 'li.item' x3 matched 0"  # plain HTTP: 1.5 s
    assert len(ladder) in (2, 3)  # out before Chromium, or on it (its start counts too)


@pytest_twisted.ensureDeferred
async def test_a_wait_that_times_out_on_every_rung_names_the_actions_timeout(
    site: SiteServer,
) -> None:
    """Issue 35, item 6(d): the error blamed download_timeout ("... ran out on
    chromium (177 s left ...)") and hid the action's own timeout."""
    request = rendered(
        site,
        "/echo-html",
        cdp_expect="pre#echo",
        cdp_actions=[["wait_for_selector", "#never", {"timeout": 1}]],
    )
    spider, _ = await crawl([request], {"CDP_POOL_FALLBACK": "chromium"})
    [failure] = spider.failures
    assert isinstance(failure.value, DownloadTimeoutError), failure
    message = str(failure.value)
    assert "wait_for_selector" in message, message
    assert "timed out: no element matches #never (after 1 s, the action's timeout" in message
    assert "ran out on" not in message, message  # download_timeout was not the limit
    assert [e["rung"] for e in failure.request.meta["cdp_ladder"]] == ["lightpanda", "chromium"]


@pytest_twisted.ensureDeferred
async def test_an_unsupported_action_falls_back_to_chromium_with_cookies_and_actions(
    site: SiteServer,
) -> None:
    request = scrapy.Request(
        site.url("/echo-html"), cookies={"ladder": "carried"}, dont_filter=True,
        meta={"cdp": True, "cdp_expect": "pre#echo",
              "cdp_actions": [["scroll_to_bottom"], ["evaluate", "typeof document.getAnimations"]]},
    )  # fmt: skip
    spider, crawler = await crawl([request], {"CDP_POOL_FALLBACK": "chromium"})
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.meta["cdp_rung"] == "chromium"
    assert response.meta["cdp_fallback_reason"].startswith("lightpanda: ActionUnsupported: ")
    assert rungs_tried(response) == ["lightpanda", "chromium"]  # not "auto": no HTTP rung
    echo = json.loads(response.css("pre#echo::text").get())
    assert echo["cookies"] == {"ladder": "carried"}  # cookies carried over
    assert response.meta["cdp_results"][1] == "function"  # actions too, run on Chromium
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/ladder/climbed/ActionUnsupported"] == 1


@pytest_twisted.ensureDeferred
async def test_a_profile_carries_over_to_the_chromium_rung(
    site: SiteServer, tmp_path: Path
) -> None:
    name = f"ladder-{token()}"
    write_profile(tmp_path, name, session=f"s-{name}")
    request = scrapy.Request(
        site.url("/whoami"), dont_filter=True,
        meta={"cdp_profile": name, "cdp_expect": "pre#server",
              "cdp_actions": [["scroll_to_bottom"]]},
    )  # fmt: skip
    settings = {**LADDER, "CDP_POOL_PROFILES_DIR": str(tmp_path)}
    spider, _ = await crawl([request], settings)
    assert not spider.failures, spider.failures
    [response] = spider.responses
    # no plain HTTP rung for a profile's request: its session is in the browser
    assert rungs_tried(response) == ["lightpanda", "chromium"]
    seen = json.loads(response.css("pre#server::text").get())
    assert seen["cookies"] == {"session": f"s-{name}"}


@pytest_twisted.ensureDeferred
async def test_a_redirect_is_followed_by_scrapy_and_its_target_checked(site: SiteServer) -> None:
    request = rendered(site, "/redirect/start", cdp_expect="h1#final")
    spider, crawler = await crawl([request], LADDER)
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.url.endswith("/redirect/final")
    assert len(response.meta["redirect_urls"]) == 2  # by Scrapy's RedirectMiddleware
    assert [e["outcome"] for e in response.meta["cdp_ladder"]] == ["met"]  # this hop's only
    assert response.meta["cdp_rung"] == "http"
    assert "cdp_fallback_reason" not in response.meta
    assert crawler.stats.get_value("cdp_pool/ladder/tries/http") == 3


@pytest_twisted.ensureDeferred
async def test_without_an_expectation_the_ladder_is_off(site: SiteServer) -> None:
    settings = {k: v for k, v in LADDER.items() if k != "CDP_POOL_EXPECT"}
    spider, crawler = await crawl(
        [rendered(site, "/ladder/canvas/1"), rendered(site, "/ladder/script/1", cdp_expect=None)],
        settings,
    )
    assert not spider.failures, spider.failures
    for response in spider.responses:  # today's render: Lightpanda, unchecked
        assert "cdp_rung" not in response.meta
        assert "cdp_ladder" not in response.meta
    assert spider.by_url("canvas").css("li.item").getall() == []
    assert not [k for k in crawler.stats.get_stats() if k.startswith("cdp_pool/ladder/")]


@pytest_twisted.ensureDeferred
async def test_a_bad_expectation_fails_its_request_by_name(site: SiteServer) -> None:
    spider, _ = await crawl(
        [rendered(site, "/ladder/static/1", cdp_expect="li..item"),
         rendered(site, "/ladder/static/2", cdp_expect={"predicate": "tests.nowhere.check"})],
        LADDER,
    )  # fmt: skip
    messages = sorted(str(f.value) for f in spider.failures)
    assert len(messages) == 2
    assert not spider.responses
    bad_selector = "/ladder/static/1>: meta['cdp_expect'] = 'li..item': 'li..item' is not a valid"
    assert bad_selector in messages[0]
    assert "predicate 'tests.nowhere.check' does not import" in messages[1]


@pytest_twisted.ensureDeferred
async def test_the_status_line_counts_the_ladder_s_chromium_server(site: SiteServer) -> None:
    """Once the Chromium rung has started its server, a status sample measures
    it with the Lightpanda one (kind ``lightpanda+chromium``, both trees' memory)."""
    kinds: list[str | None] = []

    def sample(spider: scrapy.Spider, response: Any) -> list[scrapy.Request]:
        [status] = [
            e for e in spider.crawler.extensions.middlewares
            if isinstance(e, EngineStatusExtension)
        ]  # fmt: skip
        kinds.append(status.sample("interval").server_kind)
        return []

    request = scrapy.Request(
        site.url("/echo-html"), dont_filter=True,
        meta={"cdp": True, "cdp_expect": "pre#echo", "cdp_actions": [["scroll_to_bottom"]],
              "then": sample},
    )  # fmt: skip
    spider, _ = await crawl([request], {"CDP_POOL_FALLBACK": "chromium"})
    assert not spider.failures, spider.failures
    assert spider.responses[0].meta["cdp_rung"] == "chromium"
    assert kinds == ["lightpanda+chromium"]


@pytest_twisted.ensureDeferred
async def test_a_render_from_the_http_cache_keeps_what_the_ladder_said(
    site: SiteServer, tmp_path: Path
) -> None:
    """Scrapy's HTTP cache serves the second crawl; the response still says
    which rung rendered it, and why it climbed."""
    settings = {
        "CDP_POOL_FALLBACK": "chromium",
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path),
    }
    metas = []
    for _ in ("rendered", "cached"):
        request = scrapy.Request(
            site.url("/echo-html?cache=ladder"),
            meta={"cdp": True, "cdp_expect": "pre#echo", "cdp_actions": [["scroll_to_bottom"]]},
        )
        spider, crawler = await crawl([request], settings)
        assert not spider.failures, spider.failures
        [response] = spider.responses
        metas.append({key: response.meta.get(key) for key in ("cdp_rung", "cdp_fallback_reason")})
    assert crawler.stats.get_value("httpcache/hit") == 1
    assert metas[0]["cdp_rung"] == "chromium"
    assert metas[0]["cdp_fallback_reason"].startswith("lightpanda: ActionUnsupported")
    assert metas[1] == metas[0]
