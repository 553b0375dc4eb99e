"""merge_into_jar's caps on a real CookiesMiddleware jar: 180 cookies per
domain, the jar's own first; none over 4096 bytes of name and value."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.downloadermiddlewares.cookies import CookiesMiddleware

from scrapy_cdp_pool.render._request.cookies import MAX_COOKIES_PER_DOMAIN, merge_into_jar


def _cookie(name: str, value: str = "v", domain: str = "a.test") -> dict[str, Any]:
    return {"name": name, "value": value, "domain": domain, "path": "/", "expires": -1}


def _names(middleware: CookiesMiddleware, domain: str) -> set[str]:
    return {c.name for c in middleware.jars[None] if c.domain.lstrip(".") == domain}


def test_at_most_180_per_domain_and_the_jars_own_kept() -> None:
    middleware = CookiesMiddleware()
    request = Request("http://a.test/")
    merge_into_jar(middleware, request, [_cookie("session")], ())
    page = [_cookie(f"c{i}") for i in range(500)] + [_cookie("other", domain="b.test")]
    merged = merge_into_jar(middleware, request, page, ())
    names = _names(middleware, "a.test")
    assert len(names) == MAX_COOKIES_PER_DOMAIN
    assert "session" in names
    assert _names(middleware, "b.test") == {"other"}
    assert merged.too_many == {"a.test": 500 - (MAX_COOKIES_PER_DOMAIN - 1)}
    # an update of a cookie the jar holds is not a new one
    again = merge_into_jar(middleware, request, [_cookie("session", "new")], ())
    assert again.count == 1
    assert not again.dropped


def test_a_cookie_over_4096_bytes_is_not_copied() -> None:
    middleware = CookiesMiddleware()
    request = Request("http://a.test/")
    merged = merge_into_jar(
        middleware, request, [_cookie("big", "x" * 4094), _cookie("ok", "x" * 4093)], ()
    )
    assert _names(middleware, "a.test") == {"ok"}
    assert merged.too_large == {"a.test": 1}
