"""meta["proxy"] as a rendered request's proxy (render/_request/request_proxy.py): what
Scrapy's HttpProxyMiddleware leaves on a request, read back; a profile's proxy
against the request's."""

from __future__ import annotations

import pytest
import scrapy
from scrapy.downloadermiddlewares.httpproxy import HttpProxyMiddleware

from scrapy_cdp_pool.render._request.context_options import ContextOptions
from scrapy_cdp_pool.render._request.request_proxy import (
    ProxyConflict,
    request_proxy,
    with_request_proxy,
)


def through_middleware(proxy: str) -> scrapy.Request:
    request = scrapy.Request("http://example.test/", meta={"proxy": proxy})
    HttpProxyMiddleware().process_request(request)
    return request


def test_credentials_moved_to_a_header_by_scrapy_are_read_back() -> None:
    request = through_middleware("http://al%40ice:p%3Ass@proxy.test:3128")
    assert b"Proxy-Authorization" in request.headers
    proxy = request_proxy(request)
    assert proxy is not None
    assert (proxy.server, proxy.username, proxy.password) == (
        "http://proxy.test:3128", "al@ice", "p:ss",
    )  # fmt: skip
    assert "p:ss" not in repr(proxy)


def test_no_proxy_and_an_explicit_none() -> None:
    assert request_proxy(scrapy.Request("http://example.test/")) is None
    assert request_proxy(through_middleware("")) is None


def test_a_profile_proxy_wins_over_the_environment_and_conflicts_with_the_request() -> None:
    profile = ContextOptions(name="p", proxy_server="http://mine.test")
    request = scrapy.Request("http://example.test/", meta={"proxy": "http://other.test:1"})
    proxy = request_proxy(request)
    with pytest.raises(ProxyConflict, match="drop one of them"):
        with_request_proxy(request, profile, proxy)
    request.meta["_scheme_proxy"] = True  # set by HttpProxyMiddleware from http_proxy
    assert with_request_proxy(request, profile, request_proxy(request)) is profile
    same = scrapy.Request("http://example.test/", meta={"proxy": "http://mine.test:80"})
    assert with_request_proxy(same, profile, request_proxy(same)) is profile


def test_a_request_without_profile_gets_an_anonymous_context_with_its_proxy() -> None:
    request = through_middleware("https://u:pw@proxy.test")
    context = with_request_proxy(request, None, request_proxy(request))
    assert context is not None
    assert context.name == ""
    assert context.requirements() == {"proxy"}
    assert (context.proxy_server, context.proxy_username) == ("https://proxy.test:443", "u")
    assert context.server_options() is None  # a proxy is per context on both backends
    assert context.context_params()["proxyServer"] == "https://proxy.test:443"
    lightpanda = context.context_params(credentials_in_url=True)
    assert lightpanda["proxyServer"] == "https://u:pw@proxy.test:443"
