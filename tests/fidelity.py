"""Issue 13 inputs (items 1, 2, 3, 8): a rendered request gives what plain
Scrapy gives. Written once, run on each embedded backend by
``test_fidelity_lightpanda.py`` and ``test_fidelity_chromium.py``; each test is
a real crawl of the real test site, the reference being the same request sent
by plain Scrapy in the same crawl or a twin one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import FormRequest, JsonResponse

from tests.contract import token
from tests.crawl import crawl
from tests.servers import SiteServer
from tests.site.assets import build_pdf
from tests.site.fidelity import CSV, JSON_DOC, TEXT_1251


def follow(*urls: str, cdp: bool = False) -> Any:
    """A ``then`` callback sending ``urls`` (same cookiejar) after a response."""

    def then(spider: Any, response: Any) -> Any:
        for url in urls:
            yield scrapy.Request(
                url, dont_filter=True,
                meta={"cdp": cdp, "cookiejar": response.meta.get("cookiejar")},
            )  # fmt: skip

    return then


class FidelityContract:
    def backend_settings(self) -> dict[str, Any]:
        raise NotImplementedError

    async def crawl(self, requests: list[scrapy.Request], **settings: Any) -> Any:
        return await crawl(requests, {**self.backend_settings(), **settings})

    # 1. compressed documents ---------------------------------------------

    @pytest.mark.parametrize(
        ("name", "expected"),
        [("csv", CSV), ("pdf", build_pdf()), ("text", TEXT_1251)],
        ids=["csv", "pdf", "text"],
    )
    @pytest_twisted.ensureDeferred
    async def test_compressed_document_is_decoded_once(
        self, site: SiteServer, name: str, expected: bytes
    ) -> None:
        url = site.url(f"/fid/encoded/{name}")
        spider, _ = await self.crawl(
            [scrapy.Request(url, meta={"cdp": True}),
             scrapy.Request(url + "?plain", meta={"cdp": False})]
        )  # fmt: skip
        assert not spider.failures, spider.failures
        plain = spider.by_url("?plain")
        rendered = next(r for r in spider.responses if r.url == url)
        assert rendered.body == plain.body == expected
        assert type(rendered) is type(plain)
        assert b"Content-Encoding" not in rendered.headers
        assert rendered.headers.get(b"Content-Length") == plain.headers.get(b"Content-Length")

    @pytest_twisted.ensureDeferred
    async def test_brotli_json_gives_json(self, site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/fid/encoded/json"), meta={"cdp": True})]
        )
        assert not spider.failures, spider.failures
        response = spider.responses[0]
        assert isinstance(response, JsonResponse)
        assert response.json() == JSON_DOC

    @pytest_twisted.ensureDeferred
    async def test_compressed_html_is_rendered(self, site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/fid/encoded/html"), meta={"cdp": True})]
        )
        assert not spider.failures, spider.failures
        response = spider.responses[0]
        assert response.css("#enc::text").get() == "gzip café"
        assert b"Content-Encoding" not in response.headers

    # 2. cookies ------------------------------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_redirect_hop_cookie_reaches_the_jar(self, site: SiteServer) -> None:
        then = follow(site.url("/fid/cookies?plain"), site.url("/fid/cookies?rendered"))
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/fid/login"), meta={"cdp": True, "then": then})]
        )
        assert not spider.failures, spider.failures
        home = spider.by_url("/fid/home")
        assert json.loads(home.css("#cookies::text").get()) == {"sid": "s3cr3t"}
        for query in ("?plain", "?rendered"):
            assert spider.by_url(query).json() == {"sid": "s3cr3t", "theme": "dark"}

    @pytest.mark.parametrize("enabled", [True, False])
    @pytest_twisted.ensureDeferred
    async def test_cookies_set_by_script_and_xhr_reach_the_jar(
        self, site: SiteServer, enabled: bool
    ) -> None:
        meta = {
            "cdp": True,
            "cdp_actions": [["wait_for_selector", "body[data-done=yes]"]],
            "then": follow(site.url("/fid/cookies")),
        }
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/fid/js-cookies"), meta=meta)], COOKIES_ENABLED=enabled
        )
        assert not spider.failures, spider.failures
        expected = {"jsc": "1", "xhrc": "2"} if enabled else {}
        assert spider.by_url("/fid/cookies").json() == expected

    @pytest_twisted.ensureDeferred
    async def test_cookie_attributes_kept_in_the_jar(self, site: SiteServer) -> None:
        def then(spider: Any, response: Any) -> Any:
            # scoped has Path=/fid/: sent to /fid/cookies, not to /echo
            yield scrapy.Request(site.url("/fid/cookies"), dont_filter=True)
            yield scrapy.Request(site.url("/echo"), dont_filter=True)

        js = "document.cookie = 'jsp=1; path=/fid/; max-age=600'; document.cookie = 'jss=2; path=/'"
        meta = {"cdp": True, "cdp_actions": [["evaluate", js]], "then": then}
        spider, _ = await self.crawl([scrapy.Request(site.url("/fid/cookie-attrs"), meta=meta)])
        assert not spider.failures, spider.failures
        assert spider.by_url("/fid/cookies").json() == {
            "scoped": "1", "lasting": "2", "hidden": "3", "jsp": "1", "jss": "2",
        }  # fmt: skip
        assert spider.by_url("/echo").json()["cookies"] == {
            "lasting": "2",
            "hidden": "3",
            "jss": "2",
        }

    # 3. redirects ----------------------------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_redirect_meta_as_scrapy_writes_it(self, site: SiteServer) -> None:
        url = site.url("/redirect/start")
        spider, _ = await self.crawl(
            [scrapy.Request(url, meta={"cdp": True}),
             scrapy.Request(url, meta={"cdp": False}, dont_filter=True)]
        )  # fmt: skip
        assert not spider.failures, spider.failures
        plain, rendered = sorted(spider.responses, key=lambda r: bool(r.meta.get("cdp")))
        for key in ("redirect_times", "redirect_ttl", "redirect_urls", "redirect_reasons"):
            assert rendered.meta[key] == plain.meta[key], key
        assert rendered.meta["redirect_times"] == 2

    @pytest_twisted.ensureDeferred
    async def test_redirect_limits_and_dont_redirect(self, site: SiteServer) -> None:
        chain = site.url("/fid/chain")
        spider, _ = await self.crawl(
            [scrapy.Request(chain, meta={"cdp": True}),
             scrapy.Request(chain + "?step=0", meta={"cdp": True, "dont_redirect": True})],
            REDIRECT_MAX_TIMES=3,
        )  # fmt: skip
        assert len(spider.failures) == 1
        failure = spider.failures[0]
        assert failure.check(IgnoreRequest)
        assert "max redirections" in str(failure.value)
        assert failure.request.url == site.url("/fid/chain?step=3")
        kept = spider.by_url("step=0")
        assert kept.status == 302
        assert kept.headers[b"Location"] == b"/fid/chain?step=1"
        assert "redirect_times" not in kept.meta
        assert all(r.url != site.url("/fid/cookies") for r in spider.responses)

    @pytest_twisted.ensureDeferred
    async def test_redirect_disabled(self, site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/fid/login"), meta={"cdp": True})], REDIRECT_ENABLED=False
        )
        assert not spider.failures, spider.failures
        assert [r.status for r in spider.responses] == [302]

    @pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
    @pytest_twisted.ensureDeferred
    async def test_form_post_redirect(self, site: SiteServer, code: int) -> None:
        url = site.url(f"/fid/redirect/{code}?to=/echo")
        secret = token()

        def form(cdp: bool) -> scrapy.Request:
            return FormRequest(
                url + ("&r" if cdp else "&p"), formdata={"q": "café", "n": "1"},
                headers={"X-CSRF-Token": secret}, meta={"cdp": cdp}, dont_filter=True,
            )  # fmt: skip

        spider, _ = await self.crawl([form(True), form(False)])
        assert not spider.failures, spider.failures
        assert len(spider.responses) == 2
        plain, rendered = sorted(spider.responses, key=lambda r: bool(r.meta.get("cdp")))
        got, want = rendered.json(), plain.json()
        for key in ("method", "body_hex", "content_type"):
            assert got[key] == want[key], key

        def csrf(echo: dict[str, Any]) -> str | None:
            return next(
                (v for k, v in echo["headers"].items() if k.lower() == "x-csrf-token"), None
            )

        assert csrf(got) == csrf(want) == secret
        assert got["method"] == ("POST" if code in (307, 308) else "GET")
        assert rendered.meta["redirect_reasons"] == [code]

    # 8. HTTP cache ---------------------------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_http_cache_keeps_rendered_and_plain_apart(
        self, site: SiteServer, tmp_path: Path
    ) -> None:
        url = site.url(f"/js?n=2&cache={token()}")
        settings = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path)}
        actions = [["evaluate", "document.querySelectorAll('p.item').length"]]

        def rendered() -> scrapy.Request:
            return scrapy.Request(url, meta={"cdp": True, "cdp_actions": actions})

        plain_spider, _ = await self.crawl([scrapy.Request(url)], **settings)
        assert plain_spider.responses[0].css("p.item").getall() == []
        first, first_crawler = await self.crawl([rendered()], **settings)
        again, again_crawler = await self.crawl([rendered()], **settings)
        for spider in (first, again):
            response = spider.responses[0]
            assert response.meta["cdp_results"] == [2]
            assert len(response.css("p.item")) == 2
            assert b"X-Cdp-Results" not in response.headers
        assert first_crawler.stats.get_value("httpcache/miss") == 1
        assert again_crawler.stats.get_value("httpcache/hit") == 1
        assert again_crawler.stats.get_value("cdp_pool/pages") is None
        plain_again, _ = await self.crawl([scrapy.Request(url)], **settings)
        assert plain_again.responses[0].body == plain_spider.responses[0].body
