"""What a profile sends: its cookies and localStorage, its headers and user
agent, never Scrapy's cookie jar; and what each backend cannot honour is
routed to one that can, or failed with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import ProfileError
from tests.crawl import crawl
from tests.profiles import MOZILLA_UA, cookie, hits, profile_stats, token, write_profile
from tests.servers import SiteServer


def server_saw(response: scrapy.http.Response) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(response.css("#server::text").get(""))
    return seen


def page_saw(response: scrapy.http.Response) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(response.css("#js::text").get(""))
    return seen


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_profile_cookies_and_local_storage_reach_the_page_and_nothing_else_does(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    name, tag = f"alice-{token()}", token()
    write_profile(
        tmp_path, name, session=f"valid-{name}", cookies=[cookie("theme", "dark")],
        local_storage={site.base: {"token": "abc"}, "http://other.test": {"x": "y"}},
    )  # fmt: skip

    def as_alice(spider: Any, response: Any) -> Any:
        # Scrapy's jar now holds a=1 and b=2; request cookies too: neither is sent.
        yield scrapy.Request(site.url(f"/whoami?{tag}"), cookies={"jar": "1"},
                             meta={"cdp_profile": name})  # fmt: skip
        yield scrapy.Request(site.url(f"/local-storage?{tag}"), meta={"cdp_profile": name})
        refresh = {"cdp_profile": name, "then": anonymous_again}
        yield scrapy.Request(site.url(f"/refresh?{tag}"), meta=refresh)

    def anonymous_again(spider: Any, response: Any) -> Any:
        # What the identity's responses set stays out of Scrapy's jar.
        yield scrapy.Request(site.url(f"/whoami?anon-{tag}"), meta={"cdp": True})

    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/set-cookies?{tag}"), meta={"cdp": True, "then": as_alice})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path)},
    )
    assert not spider.failures
    assert server_saw(spider.by_url(f"/whoami?{tag}"))["cookies"] == {
        "session": f"valid-{name}", "theme": "dark",
    }  # fmt: skip
    storage = json.loads(spider.by_url(f"/local-storage?{tag}").css("#storage::text").get(""))
    assert storage == {"token": "abc"}
    assert spider.by_url(f"/refresh?{tag}").css("#refreshed::text").get() == f"valid-{name}.r1"
    assert server_saw(spider.by_url(f"/whoami?anon-{tag}"))["cookies"] == {"a": "1", "b": "2"}
    assert profile_stats(crawler.stats.get_stats(), name)["requests"] == 3


@pytest_twisted.ensureDeferred
async def test_identity_headers_user_agent_locale_and_time_zone_on_chromium(
    site: SiteServer, tmp_path: Path
) -> None:
    name = f"paris-{token()}"
    write_profile(tmp_path, name, session="s", identity={
        "userAgent": MOZILLA_UA, "locale": "fr-FR", "timezoneId": "Europe/Paris",
        "viewport": {"width": 640, "height": 480}, "extraHTTPHeaders": {"X-Team": "blue"},
    })  # fmt: skip
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/whoami?{name}"), meta={"cdp_profile": name})],
        {"CDP_POOL_BROWSER": "chromium", "CDP_POOL_PROFILES_DIR": str(tmp_path)},
    )
    assert not spider.failures
    response = spider.responses[0]
    server = server_saw(response)
    assert server["userAgent"] == MOZILLA_UA
    assert server["acceptLanguage"].startswith("fr-FR")
    assert server["headers"] == {"X-Team": "blue"}
    assert page_saw(response) == {"userAgent": MOZILLA_UA, "language": "fr-FR",
                                  "timeZone": "Europe/Paris", "width": 640}  # fmt: skip


@pytest_twisted.ensureDeferred
async def test_lightpanda_alone_fails_what_it_cannot_honour_and_serves_the_rest(
    site: SiteServer, tmp_path: Path
) -> None:
    mozilla, zoned, plain = f"moz-{token()}", f"tz-{token()}", f"plain-{token()}"
    write_profile(tmp_path, mozilla, session="m", identity={"userAgent": MOZILLA_UA})
    write_profile(tmp_path, zoned, session="z", identity={"timezoneId": "Asia/Tokyo"})
    write_profile(tmp_path, plain, session="p", identity={
        "userAgent": "PlainBot/1.0", "locale": "de-DE", "extraHTTPHeaders": {"X-Plain": "1"},
    })  # fmt: skip
    requests = [
        scrapy.Request(site.url(f"/whoami?{name}&i={i}"), meta={"cdp_profile": name})
        for name in (mozilla, zoned, plain)
        for i in range(2)
    ]
    # No dedicated servers (they would take the time zone: see test_profiles_proxy.py).
    spider, crawler = await crawl(
        requests, {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_DEDICATED_SERVERS": 0}
    )
    assert sorted(r.url for r in spider.responses) == [
        site.url(f"/whoami?{plain}&i=0"), site.url(f"/whoami?{plain}&i=1"),
    ]  # fmt: skip
    server = server_saw(spider.responses[0])
    assert server["userAgent"] == "PlainBot/1.0"
    assert server["acceptLanguage"] == "de-DE"
    assert server["headers"] == {"X-Plain": "1"}
    failures = {f.request.meta["cdp_profile"]: [] for f in spider.failures}
    for failure in spider.failures:
        assert isinstance(failure.value, ProfileError)
        failures[failure.request.meta["cdp_profile"]].append(str(failure.value))
    assert sorted(failures) == sorted([mozilla, zoned])
    for message in failures[mozilla]:
        assert "no endpoint can honour user_agent_mozilla (endpoints: lightpanda" in message
    for message in failures[zoned]:
        assert "no endpoint can honour timezone (endpoints: lightpanda" in message
    for name in (mozilla, zoned):
        # Never sent as another identity; the second request failed at once.
        assert hits(site, f"/whoami?{name}&i=0") + hits(site, f"/whoami?{name}&i=1") == 0
        assert profile_stats(crawler.stats.get_stats(), name)["failed_fast"] == 2


@pytest_twisted.ensureDeferred
async def test_profiles_go_to_the_endpoint_that_honours_them(
    site: SiteServer, tmp_path: Path, lightpanda_endpoint: str, chromium_endpoint: str
) -> None:
    tokyo, plain = f"tokyo-{token()}", f"plain-{token()}"
    write_profile(tmp_path, tokyo, session="t",
                  identity={"userAgent": MOZILLA_UA, "timezoneId": "Asia/Tokyo"})  # fmt: skip
    write_profile(tmp_path, plain, session="p", identity={"userAgent": "PlainBot/1.0"})
    requests = [
        scrapy.Request(site.url(f"/whoami?{name}&i={i}"), meta={"cdp_profile": name})
        for name in (tokyo, plain)
        for i in range(4)
    ]
    spider, _ = await crawl(
        requests,
        {"CDP_POOL_ENDPOINTS": [lightpanda_endpoint, chromium_endpoint],
         "CDP_POOL_PROFILES_DIR": str(tmp_path)},
    )  # fmt: skip
    assert not spider.failures
    assert len(spider.responses) == 8
    for response in spider.responses:
        expected = MOZILLA_UA if tokyo in response.url else "PlainBot/1.0"
        assert server_saw(response)["userAgent"] == expected
        assert page_saw(response)["userAgent"] == expected
        if tokyo in response.url:
            assert page_saw(response)["timeZone"] == "Asia/Tokyo"


@pytest_twisted.ensureDeferred
async def test_a_profile_request_is_never_sent_unrendered(site: SiteServer, tmp_path: Path) -> None:
    name = f"plain-{token()}"
    write_profile(tmp_path, name, session="p")
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/whoami?{name}"), meta={"cdp_profile": name, "cdp": False})],
        {"CDP_POOL_PROFILES_DIR": str(tmp_path)},
    )
    assert not spider.responses
    expected = (
        f"profile {name!r}: meta['cdp'] is False, but a profile's requests are always "
        "rendered in the profile's browser context"
    )
    assert [str(f.value) for f in spider.failures] == [expected]
    assert hits(site, f"/whoami?{name}") == 0


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_geolocation_reaches_the_page(site: SiteServer, tmp_path: Path, browser: str) -> None:
    name = f"geo-{token()}"
    write_profile(tmp_path, name, session="g", identity={
        "geolocation": {"latitude": 48.85, "longitude": 2.35, "accuracy": 10},
    })  # fmt: skip
    where = (
        "new Promise(r => navigator.geolocation.getCurrentPosition("
        "p => r([p.coords.latitude, p.coords.longitude]), e => r(String(e.message))))"
    )
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/whoami?{name}"), meta={
            "cdp_profile": name, "cdp_actions": [["evaluate", where]],
        })],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path)},
    )  # fmt: skip
    assert not spider.failures, spider.failures
    assert spider.responses[0].meta["cdp_results"] == [[48.85, 2.35]]
