"""HTTP basic auth for what the page does (issue 27 item 8): the credentials
Scrapy's ``HttpAuthMiddleware`` gives a rendered request (``http_user``,
``http_pass``, ``http_auth_domain``) answer the challenges of the page's own
same-origin calls, as a browser given them does, and are never sent to
another origin; on both backends."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit
from urllib.request import urlopen

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}


#: Scrapy's HttpAuthMiddleware settings: the test site's credentials
#: (HTTPAUTH_DOMAIN, the site's address and port, is set per test)
AUTH = {"HTTPAUTH_USER": "user", "HTTPAUTH_PASS": "secret"}


def _seen(site: SiteServer) -> list[dict[str, Any]]:
    """What the site's API saw: each request's host and whether it carried
    credentials."""
    with urlopen(site.url("/auth/seen"), timeout=10) as answer:
        seen: list[dict[str, Any]] = json.load(answer)
    return seen


def _seen(site: SiteServer) -> list[dict[str, Any]]:
    """What the site's API saw: each request's host and whether it carried
    credentials."""
    with urlopen(site.url("/auth/seen"), timeout=10) as answer:
        seen: list[dict[str, Any]] = json.load(answer)
    return seen


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_the_pages_own_api_call_is_answered_with_the_credentials(
    site: SiteServer, backend: str
) -> None:
    port = urlsplit(site.url("/")).port
    other = f"http://localhost:{port}/auth/api"  # another origin (host name), same server
    url = site.url(f"/auth/app?other={other}")
    meta: dict[str, Any] = {"cdp": True, "cdp_actions": [["wait_for_selector", "body[data-done]"]]}
    spider, _ = await crawl(
        [scrapy.Request(url, meta=meta)],
        {**BACKENDS[backend], **AUTH, "HTTPAUTH_DOMAIN": f"127.0.0.1:{port}"},
    )
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.css("#same::text").get() == "items 1,2"
    assert response.css("#other::text").get() == "status 401"
    seen = _seen(site)
    assert {"host": f"127.0.0.1:{port}", "credentials": True} in seen
    assert all(not hit["credentials"] for hit in seen if hit["host"].startswith("localhost"))
