"""The handler's contract, written once and run against each real backend.

A subclass sets :meth:`backend_settings` and the capability flags; each test is
a real Scrapy crawl of the real test site through a real CDP server.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.http import FormRequest, HtmlResponse, JsonResponse

from tests.crawl import crawl
from tests.servers import SiteServer


def token() -> str:
    return uuid.uuid4().hex[:10]


class HandlerContract:
    """Behaviour every backend must have."""

    #: the browser loads <img> sub-resources (Lightpanda does not, by default)
    loads_images = True
    #: Page.captureScreenshot works
    can_screenshot = True
    #: the browser lays pages out (scrolling works; not Lightpanda)
    has_layout = True

    def backend_settings(self) -> dict[str, Any]:
        raise NotImplementedError

    async def crawl(self, requests: list[scrapy.Request], **settings: Any) -> Any:
        return await crawl(requests, {**self.backend_settings(), **settings})

    @pytest_twisted.ensureDeferred
    async def test_js_rendered_content(self, site: SiteServer) -> None:
        spider, crawler = await self.crawl(
            [scrapy.Request(site.url("/js?n=3"), meta={"cdp": True})]
        )
        assert not spider.failures
        response = spider.responses[0]
        assert isinstance(response, HtmlResponse)
        assert response.status == 200
        assert response.css("p.item::text").getall() == ["item-1", "item-2", "item-3"]
        assert response.css("body::attr(data-rendered)").get() == "yes"
        assert response.meta["download_latency"] > 0
        stats = crawler.stats.get_stats()
        assert stats["cdp_pool/pages"] == 1
        assert stats["cdp_pool/contexts_opened"] == stats["cdp_pool/contexts_closed"] == 1

    @pytest_twisted.ensureDeferred
    async def test_redirect_chain_with_cookie_on_a_hop(self, site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/redirect/start"), meta={"cdp": True})]
        )
        response = spider.responses[0]
        assert response.status == 200
        assert response.url == site.url("/redirect/final")
        assert response.meta["redirect_urls"] == [
            site.url("/redirect/start"), site.url("/redirect/mid"),
        ]  # fmt: skip
        assert response.meta["redirect_reasons"] == [302, 301]
        assert "hop=1" in response.css("#cookies::text").get("")

    @pytest.mark.parametrize("status", [404, 500])
    @pytest_twisted.ensureDeferred
    async def test_error_status_with_headers(self, site: SiteServer, status: int) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url(f"/status/{status}"), meta={"cdp": True})]
        )
        response = spider.responses[0]
        assert response.status == status
        assert response.headers[b"X-Test-Status"] == str(status).encode()
        assert response.css("#status::text").get() == str(status)

    @pytest_twisted.ensureDeferred
    async def test_set_cookies_reach_scrapy_jar_and_request_cookies_reach_server(
        self, site: SiteServer
    ) -> None:
        def then(spider: Any, response: Any) -> Any:
            yield scrapy.Request(site.url("/echo?after=" + token()), meta={"cdp": True})

        spider, _ = await self.crawl([
            scrapy.Request(site.url("/set-cookies"), meta={"cdp": True, "then": then},
                           cookies={"c": "3"}),
        ])  # fmt: skip
        assert not spider.failures
        first = spider.by_url("/set-cookies")
        assert sorted(first.headers.getlist(b"Set-Cookie")) == [b"a=1; Path=/", b"b=2; Path=/"]
        echo = spider.by_url("/echo")
        cookies = echo.json()["cookies"]
        assert cookies == {"a": "1", "b": "2", "c": "3"}

    @pytest_twisted.ensureDeferred
    async def test_form_post_and_binary_post_are_byte_exact(self, site: SiteServer) -> None:
        binary = bytes(range(256)) + b"\x00\xff"
        spider, _ = await self.crawl([
            FormRequest(site.url("/echo?form"), formdata={"q": "café", "n": "1"},
                        meta={"cdp": True}),
            scrapy.Request(site.url("/echo?bin"), method="POST", body=binary,
                           headers={"Content-Type": "application/octet-stream",
                                    "X-Custom": "yes"}, meta={"cdp": True}),
        ])  # fmt: skip
        assert not spider.failures
        form = spider.by_url("/echo?form").json()
        assert form["method"] == "POST"
        assert form["content_type"] == "application/x-www-form-urlencoded"
        assert bytes.fromhex(form["body_hex"]) == b"q=caf%C3%A9&n=1"
        sent = spider.by_url("/echo?bin").json()
        assert sent["method"] == "POST"
        assert sent["content_type"] == "application/octet-stream"
        assert bytes.fromhex(sent["body_hex"]) == binary
        headers = {k.lower(): v for k, v in sent["headers"].items()}
        assert headers["x-custom"] == "yes"

    @pytest_twisted.ensureDeferred
    async def test_json_document_keeps_its_bytes(self, site: SiteServer) -> None:
        spider, crawler = await self.crawl([scrapy.Request(site.url("/json"), meta={"cdp": True})])
        response = spider.responses[0]
        assert isinstance(response, JsonResponse)
        assert response.json() == {"ok": True, "items": [1, 2, 3]}
        assert crawler.stats.get_value("cdp_pool/documents_raw") == 1

    @pytest_twisted.ensureDeferred
    async def test_attachment_pdf_returns_the_pdf_bytes(self, site: SiteServer) -> None:
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/pdf?rendered"), meta={"cdp": True}),
            scrapy.Request(site.url("/pdf?plain"), meta={"cdp": False}),
        ])  # fmt: skip
        rendered = spider.by_url("/pdf?rendered")
        plain = spider.by_url("/pdf?plain")
        assert rendered.status == 200
        assert rendered.body.startswith(b"%PDF-")
        assert rendered.body == plain.body
        assert rendered.headers[b"Content-Type"] == b"application/pdf"

    @pytest_twisted.ensureDeferred
    async def test_204_has_no_body(self, site: SiteServer) -> None:
        spider, _ = await self.crawl([scrapy.Request(site.url("/204"), meta={"cdp": True})])
        assert not spider.failures
        assert spider.responses[0].status == 204
        assert spider.responses[0].body == b""

    @pytest_twisted.ensureDeferred
    async def test_image_that_never_answers_does_not_block_the_page(self, site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/hanging-image?" + token()), meta={"cdp": True})],
            CDP_POOL_NAVIGATION_TIMEOUT_SECONDS=2,
            DOWNLOAD_TIMEOUT=20,
        )
        assert not spider.failures
        assert spider.responses[0].css("#ready::text").get() == "ready"

    @pytest_twisted.ensureDeferred
    async def test_page_that_navigates_itself_away(self, site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/self-navigate"), meta={"cdp": True})]
        )
        response = spider.responses[0]
        assert response.url == site.url("/js?n=2")
        assert response.css("p.item::text").getall() == ["item-1", "item-2"]

    @pytest_twisted.ensureDeferred
    async def test_click_that_navigates_to_a_404(self, site: SiteServer) -> None:
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/click-to-404"),
                           meta={"cdp": True, "cdp_actions": [["click", "#go"]]}),
        ])  # fmt: skip
        assert not spider.failures
        response = spider.responses[0]
        assert response.status == 404
        assert response.url == site.url("/status/404")
        assert response.headers[b"X-Test-Status"] == b"404"

    @pytest_twisted.ensureDeferred
    async def test_latin1_page_text(self, site: SiteServer) -> None:
        spider, _ = await self.crawl([scrapy.Request(site.url("/latin1"), meta={"cdp": True})])
        response = spider.responses[0]
        assert response.css("#t::text").get() == "café naïve"

    @pytest_twisted.ensureDeferred
    async def test_actions_results_in_order(self, site: SiteServer) -> None:
        actions: list[Any] = [
            ["wait_for_selector", "p.item", {"timeout": 5}],
            ["evaluate", "document.querySelectorAll('p.item').length"],
            ["scroll_to_bottom"] if self.has_layout else ["wait_for_load_state"],
            ["wait_for_timeout", 10],
        ]
        if self.can_screenshot:
            actions.append(["screenshot", {"full_page": True}])
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/js?n=4"), meta={"cdp": True, "cdp_actions": actions}),
        ])  # fmt: skip
        assert not spider.failures, spider.failures
        results = spider.responses[0].meta["cdp_results"]
        assert results[:4] == [None, 4, None, None]
        if self.can_screenshot:
            assert results[4].startswith(b"\x89PNG")

    @pytest_twisted.ensureDeferred
    async def test_bad_action_fails_only_its_request(self, site: SiteServer) -> None:
        # the missing click waits for the action timeout: 2 s, not the default 10
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/js?bad"), meta={"cdp": True, "cdp_actions": [["fly", 1]]}),
            scrapy.Request(site.url("/js?missing"),
                           meta={"cdp": True, "cdp_actions": [["click", "#nope"]]}),
            scrapy.Request(site.url("/js?good"), meta={"cdp": True}),
        ], CDP_POOL_ACTION_TIMEOUT_SECONDS=2)  # fmt: skip
        assert [r.url for r in spider.responses] == [site.url("/js?good")]
        messages = sorted(str(f.value) for f in spider.failures)
        assert any("unknown action 'fly'" in m for m in messages), messages
        assert any("click" in m and "#nope" in m for m in messages), messages

    @pytest.mark.own_browser  # counts its own crawler's pages or contexts
    @pytest_twisted.ensureDeferred
    async def test_non_rendered_requests_never_touch_the_pool(self, site: SiteServer) -> None:
        key = token()
        spider, crawler = await self.crawl([scrapy.Request(site.url(f"/js?plain={key}"))])
        assert spider.responses[0].css("p.item").getall() == []  # not rendered
        stats = crawler.stats.get_stats()
        assert not [k for k in stats if k.startswith("cdp_pool/")]
        assert site.stats()["hits_by_url"][f"/js?plain={key}"] == 1

    @pytest_twisted.ensureDeferred
    async def test_pages_in_flight_never_exceed_slots(self, site: SiteServer) -> None:
        key = token()
        requests = [
            scrapy.Request(site.url(f"/inflight?key={key}&ms=150&i={i}"), meta={"cdp": True})
            for i in range(12)
        ]
        spider, crawler = await self.crawl(
            requests, CONCURRENT_REQUESTS=16, CDP_POOL_CONNECTIONS=2,
            CDP_POOL_CONTEXTS_PER_CONNECTION=1,
        )  # fmt: skip
        assert not spider.failures
        assert len(spider.responses) == 12
        assert site.stats()["inflight_max"][key] <= 2
        assert crawler.stats.get_value("cdp_pool/pages_in_flight_max") <= 2

    @pytest_twisted.ensureDeferred
    async def test_download_maxsize_cancels_the_page(self, site: SiteServer) -> None:
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/js?n=200"), meta={"cdp": True, "download_maxsize": 500}),
            scrapy.Request(site.url("/js?n=1"), meta={"cdp": True}),
        ])  # fmt: skip
        assert [r.url for r in spider.responses] == [site.url("/js?n=1")]
        assert "larger than download max size" in str(spider.failures[0].value)
