"""What the browser did to the page's URL, visible to the spider (issue 27):
``response.url`` is the page's URL when it is read (after ``pushState``,
``replaceState`` or a fragment change), as Playwright's ``page.url``; the
document's own URL is ``meta["cdp_document_url"]``; links resolve as in the
browser; and a fragment navigation never holds a render (Chromium announced it
as a navigation whose document never came)."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}
# A stalled render would run into download_timeout long before the
# navigation timeout: the render must end on its own.
STALL_SETTINGS = {"DOWNLOAD_TIMEOUT": 20, "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 60}


def _follow_item(spider: Any, response: scrapy.http.Response) -> list[scrapy.Request]:
    href = response.css("a.item::attr(href)").get()
    return [response.follow(href, meta={"cdp": True})]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("what", ["push", "replace"])
@pytest_twisted.ensureDeferred
async def test_a_pushed_url_is_the_responses_and_links_resolve_against_it(
    site: SiteServer, backend: str, what: str
) -> None:
    start = site.url(f"/hist/app?what={what}")
    spider, _ = await crawl(
        [scrapy.Request(start, meta={"cdp": True, "then": _follow_item})],
        {**BACKENDS[backend], **STALL_SETTINGS},
    )
    assert not spider.failures
    [app] = [r for r in spider.responses if r.request.url == start]
    assert app.url == site.url("/hist/catalog/list/")
    assert app.meta["cdp_document_url"] == start
    assert app.request.url == start  # what was requested stays reachable
    item = spider.by_url("item-1")
    assert item.url == site.url("/hist/catalog/list/item-1")
    assert item.css("#item::text").get() == "1"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_fragment_set_at_load_does_not_hold_the_render(
    site: SiteServer, backend: str
) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/hist/hash?when=now"), meta={"cdp": True})],
        {**BACKENDS[backend], **STALL_SETTINGS},
    )
    assert not spider.failures
    [response] = spider.responses
    assert response.url == site.url("/hist/hash?when=now#filter")
    assert response.css("#ready::text").get() == "ready"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_click_on_a_fragment_link_does_not_hold_the_actions(
    site: SiteServer, backend: str
) -> None:
    spider, _ = await crawl(
        [
            scrapy.Request(
                site.url("/hist/hash?when=never"),
                meta={
                    "cdp": True,
                    "cdp_actions": [["click", "#to-done"], ["wait_for_selector", "#target"]],
                },
            )
        ],
        {**BACKENDS[backend], **STALL_SETTINGS},
    )
    assert not spider.failures
    [response] = spider.responses
    assert response.url.endswith("#done")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_actions_reach_into_open_shadow_roots_as_playwright_does(
    site: SiteServer, backend: str
) -> None:
    actions = [
        ["fill", ".new-todo", "milk"],
        ["click", "button.add"],
        ["wait_for_selector", ".done-mark"],
    ]
    spider, _ = await crawl(
        [scrapy.Request(site.url("/shadow/app"), meta={"cdp": True, "cdp_actions": actions})],
        {**BACKENDS[backend], **STALL_SETTINGS},
    )
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.css("#out::text").get() == "added milk"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_combinators_cross_shadow_boundaries_as_in_playwright(
    site: SiteServer, backend: str
) -> None:
    # each part of each selector is in another root: the button in a pick-item's
    # shadow root, the pick-item in pick-list's, pick-list in the document
    actions = [
        ["wait_for_selector", "pick-list .items li .pick"],
        # commas, "+" and "~" inside parentheses and brackets are not combinators
        ["wait_for_selector", 'pick-list :is(ul, ol) > pick-item:nth-child(2n+1) [class~="pick"]'],
        ["click", ".items > pick-item:first-child + pick-item > li > .pick"],
        ["evaluate", "document.querySelectorAll('pick-list li, #out').length"],
    ]
    spider, _ = await crawl(
        [scrapy.Request(site.url("/shadow/nested"), meta={"cdp": True, "cdp_actions": actions})],
        {**BACKENDS[backend], **STALL_SETTINGS},
    )
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.css("#out::text").get() == "picked 2"
    # evaluate runs the page's own querySelectorAll, which does not pierce
    assert response.meta["cdp_results"][-1] == 1


#: what the shadow root's input hears of ``type "ab"`` and ``press Enter``, as on a light-DOM input
SHADOW_KEYS_LOG = (
    "keydown:a keypress:a input:a keyup:a keydown:b keypress:b input:ab keyup:b"
    " keydown:Enter keypress:Enter submit:ab keyup:Enter"
)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_keys_reach_an_input_inside_a_shadow_root(site: SiteServer, backend: str) -> None:
    actions = [["type", ".field", "ab"], ["press", ".field", "Enter"]]
    spider, _ = await crawl(
        [scrapy.Request(site.url("/shadow/keys"), meta={"cdp": True, "cdp_actions": actions})],
        {**BACKENDS[backend], **STALL_SETTINGS},
    )
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.css("#log::text").get() == SHADOW_KEYS_LOG


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_meta_refresh_is_in_the_redirect_chain_as_plain_scrapy_records_it(
    site: SiteServer, backend: str
) -> None:
    start = site.url("/hist/refresh?how=meta")
    plain, _ = await crawl([scrapy.Request(start)], {"METAREFRESH_ENABLED": True})
    rendered, _ = await crawl([scrapy.Request(start, meta={"cdp": True})], BACKENDS[backend])
    assert not plain.failures
    assert not rendered.failures
    [expected] = plain.responses
    [response] = rendered.responses
    assert response.url == expected.url == site.url("/hist/catalog/list/item-3")
    for key in ("redirect_urls", "redirect_times"):
        assert response.meta.get(key) == expected.meta.get(key), key
    assert expected.meta["redirect_reasons"] == ["meta refresh"]
    # Lightpanda reports a meta refresh as a script's navigation (docs/response.md)
    told = "meta refresh" if backend == "chromium" else "client-side navigation"
    assert response.meta["redirect_reasons"] == [told]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_script_redirect_at_load_is_in_the_redirect_chain(
    site: SiteServer, backend: str
) -> None:
    start = site.url("/hist/refresh?how=script")
    spider, _ = await crawl([scrapy.Request(start, meta={"cdp": True})], BACKENDS[backend])
    assert not spider.failures
    [response] = spider.responses
    assert response.url == site.url("/hist/catalog/list/item-3")
    assert response.meta["redirect_urls"] == [start]
    assert response.meta["redirect_times"] == 1
    assert response.meta["redirect_reasons"] == ["client-side navigation"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_declarative_shadow_roots_are_kept_as_plain_scrapy_sees_them(
    site: SiteServer, backend: str
) -> None:
    url = site.url("/shadow/declarative")
    requests = [
        scrapy.Request(url, meta={"cdp": False}),
        scrapy.Request(url, meta={"cdp": True}),
        scrapy.Request(url, meta={"cdp": True, "cdp_shadow_roots": "none"}),
    ]
    settings = {**BACKENDS[backend], "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter"}
    spider, _ = await crawl(requests, settings)
    assert not spider.failures, spider.failures

    def kind(r: scrapy.http.Response) -> str:
        return "plain" if not r.meta["cdp"] else r.meta.get("cdp_shadow_roots", "open")

    by_kind = {kind(r): r for r in spider.responses}
    inside = '#host > template[shadowrootmode="open"] > #inside::text'
    for name in ("plain", "open"):
        assert by_kind[name].css(inside).get() == "declared", name
        assert by_kind[name].css("#host > #light::text").get() == "light", name
    # an open root a script attached: in the rendered HTML as a declarative one
    attached = by_kind["open"].css('attached-box > template[shadowrootmode="open"] > #attached')
    assert attached.css("::text").get() == "attached"
    # a closed root cannot be read by any script: only plain Scrapy has it
    assert by_kind["plain"].css("closed-box #secret::text").get() == "closed"
    assert by_kind["open"].css("#secret").get() is None
    # cdp_shadow_roots = "none": the light DOM only, as document.outerHTML
    assert by_kind["none"].css("template, #inside, #attached").get() is None
    assert by_kind["none"].css("#host > #light::text").get() == "light"
