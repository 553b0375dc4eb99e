"""Rendered requests keep what plain Scrapy does with them (issue 13: proxies,
user agent, large bodies, pages that navigate themselves, TLS errors), written
once and run on each embedded backend (``test_fidelity2_*.py``).

Each test is a real crawl of the real test site; proxies are real
(``python -m tests.site.proxy``), and the HTTPS site is the test site with a
self-signed certificate made at start-up (``python -m tests.site --tls``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import ProxyServer, SiteServer

PASSWORD = "pw-" + "z" * 10

CHROME_UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.60 Safari/537.36"
)
SCRAPY_UA = f"Scrapy/{scrapy.__version__} (+https://scrapy.org)"


def proxied_url(site: SiteServer, path: str) -> str:
    """``path`` on a host that resolves nowhere: only a proxy (which maps every
    host to 127.0.0.1) reaches it."""
    return f"http://proxied.test:{urlsplit(site.base).port}{path}"


def via_proxy(response: scrapy.http.Response) -> str | None:
    echoed = json.loads(response.css("#echo::text").get(""))
    assert "Proxy-Authorization" not in echoed["headers"]
    via: str | None = echoed["headers"].get("X-Via-Proxy")
    return via


class FidelityCases:
    """Run on each embedded backend by a subclass setting :attr:`browser`."""

    browser = ""

    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_BROWSER": self.browser}

    async def crawl(self, requests: list[scrapy.Request], **settings: Any) -> Any:
        return await crawl(requests, {**self.backend_settings(), **settings})

    # Item 6: large request bodies -----------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_a_5_mb_post_body_arrives_byte_exact(self, site: SiteServer) -> None:
        body = os.urandom(5 * 1024 * 1024)
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/body-digest"), method="POST", body=body,
                           headers={"Content-Type": "application/octet-stream"},
                           meta={"cdp": True}),
        ])  # fmt: skip
        assert not spider.failures, [str(f.value) for f in spider.failures]
        seen = json.loads(spider.responses[0].body)
        assert seen == {
            "method": "POST", "length": len(body), "sha256": hashlib.sha256(body).hexdigest(),
        }  # fmt: skip

    @pytest_twisted.ensureDeferred
    async def test_an_action_script_over_1_mib_runs(self, site: SiteServer) -> None:
        script = "'" + "y" * 2_000_000 + "'.length"
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/echo-html?script"),
                           meta={"cdp": True, "cdp_actions": [["evaluate", script]]}),
        ])  # fmt: skip
        assert not spider.failures, [str(f.value) for f in spider.failures]
        assert spider.responses[0].meta["cdp_results"] == [2_000_000]

    # Item 9: TLS errors ------------------------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_a_self_signed_site_fails_naming_the_setting(self, tls_site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(tls_site.url("/echo-html?tls"), meta={"cdp": True})]
        )
        assert not spider.responses
        [failure] = spider.failures
        assert "CDP_POOL_IGNORE_HTTPS_ERRORS" in str(failure.value), str(failure.value)

    @pytest_twisted.ensureDeferred
    async def test_a_self_signed_site_loads_with_the_setting(self, tls_site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(tls_site.url("/echo-html?tls"), meta={"cdp": True})],
            CDP_POOL_IGNORE_HTTPS_ERRORS=True,
        )
        assert not spider.failures, [str(f.value) for f in spider.failures]
        response = spider.responses[0]
        assert response.status == 200
        assert json.loads(response.css("#echo::text").get(""))["query"] == "tls"

    # Item 4: meta["proxy"] ---------------------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_meta_proxy_is_the_only_way_out(self, site: SiteServer) -> None:
        """With and without credentials (in the URL, which HttpProxyMiddleware
        moves to a Proxy-Authorization header, or in that header), a wrong
        password (the proxy's 407), the site on 127.0.0.1 too: every rendered
        request reaches the site through its proxy, none directly."""
        open_proxy, auth_proxy = ProxyServer("open"), ProxyServer("auth", auth=f"u:{PASSWORD}")
        try:
            with_password = auth_proxy.url.replace("://", f"://u:{PASSWORD}@")
            header = "Basic " + base64.b64encode(f"u:{PASSWORD}".encode()).decode()
            cases = {
                "open": (open_proxy.url, {}),
                "loopback": (open_proxy.url, {}),
                "url-credentials": (with_password, {}),
                "header-credentials": (auth_proxy.url, {"Proxy-Authorization": header}),
                "wrong": (auth_proxy.url.replace("://", "://u:wrong@"), {}),
            }
            requests = [
                scrapy.Request(
                    (site.url if name == "loopback" else lambda p: proxied_url(site, p))(
                        f"/echo-html?case={name}"
                    ),
                    headers=headers, meta={"cdp": True, "proxy": proxy, "case": name},
                )
                for name, (proxy, headers) in cases.items()
            ]  # fmt: skip
            spider, _ = await self.crawl(requests, LOG_LEVEL="DEBUG")
        finally:
            open_proxy.stop()
            auth_proxy.stop()
        assert not spider.failures, [str(f.value) for f in spider.failures]
        by_case = {r.meta["case"]: r for r in spider.responses}
        assert by_case["wrong"].status == 407
        for name in ("open", "loopback"):
            assert via_proxy(by_case[name]) == "open", name
        for name in ("url-credentials", "header-credentials"):
            assert via_proxy(by_case[name]) == "auth", name
        assert sum("case=loopback" in line for line in open_proxy.log) == 1
        assert any("case=wrong" in line and line.startswith("DENIED") for line in auth_proxy.log)
        assert not any("case=wrong" in line for line in auth_proxy.log if "FORWARDED" in line)

    # Item 5: user agent ------------------------------------------------------

    async def user_agent_seen(
        self, site: SiteServer, headers: dict[str, str] | None = None, **settings: Any
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """The headers the server got and what the page's script saw."""
        spider, _ = await self.crawl(
            [scrapy.Request(site.url("/ua"), headers=headers, meta={"cdp": True})], **settings
        )
        assert not spider.failures, [str(f.value) for f in spider.failures]
        response = spider.responses[0]
        server: dict[str, str] = json.loads(response.css("#headers::text").get(""))
        page: dict[str, Any] = json.loads(response.css("#navigator::text").get(""))
        return server, page

    # Item 7: pages that navigate themselves after load ------------------------

    @pytest.mark.parametrize(
        ("how", "delay"), [("post", 0), ("location", 0), ("post", 2), ("location", 2)]
    )
    @pytest_twisted.ensureDeferred
    async def test_a_page_that_navigates_itself_after_load_gives_one_document(
        self, site: SiteServer, how: str, delay: int
    ) -> None:
        """The page's onload submits a POST form to its own URL (201), or goes
        to another URL (202), at once or ``delay`` ms later: in each of 20 runs
        the response's status, header, URL and body come from one document;
        at once, always the last one. (Chromium, before: with a 2 ms delay the
        200 of the first document with the body of the second, or
        PageScriptError; Lightpanda: the first document at once.)"""
        runs = 20
        query = f"/self-post?how={how}&delay={delay}" if delay else f"/self-post?how={how}"
        spider, _ = await self.crawl(
            [scrapy.Request(site.url(f"{query}&run={i}"), meta={"cdp": True, "run": str(i)})
             for i in range(runs)],
            CDP_POOL_CONNECTIONS=4,
        )  # fmt: skip
        assert not spider.failures, [str(f.value) for f in spider.failures]
        last = (201, b"post", "post") if how == "post" else (202, b"arrived", "arrived")
        seen = []
        for response in spider.responses:
            run = response.meta["run"]
            doc = response.css("#doc::text").get()
            seen.append((response.status, response.headers.get(b"X-Doc"), doc))
            assert seen[-1] in ((200, b"get", "get"), last)
            url = site.url(f"{query}&run={run}")
            assert response.url == (url + "&arrived=1" if doc == "arrived" else url)
            assert response.css("#run::text").get() == run
        if not delay:
            assert seen == [last] * runs
