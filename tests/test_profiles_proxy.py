"""A profile's proxy and time zone, on both backends: Chromium takes them per
browser context; Lightpanda the proxy per context too (issue 29), the time
zone only per server, so the pool starts a dedicated Lightpanda server for it
(``CDP_POOL_DEDICATED_SERVERS``).

The proxies are real (``python -m tests.site.proxy``): they map every host to
127.0.0.1, so ``http://proxied.test:<port>/`` loads only through a proxy, and
tag what they forward with ``X-Via-Proxy``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.browser.pool.embedded_server import free_port
from scrapy_cdp_pool.core.runtime import runtime_of
from tests.crawl import RecordingSpider, crawl
from tests.profiles import token, write_profile
from tests.servers import ProxyServer, SiteServer

PASSWORD = "s3cret-" + "x" * 8


@pytest.fixture
def proxies() -> Iterator[tuple[ProxyServer, ProxyServer]]:
    """``alpha`` (open) and ``beta`` (Basic ``u:PASSWORD`` required)."""
    alpha = ProxyServer("alpha")
    try:
        beta = ProxyServer("beta", auth=f"u:{PASSWORD}")
    except BaseException:
        alpha.stop()
        raise
    yield alpha, beta
    alpha.stop()
    beta.stop()


def proxied_url(site: SiteServer, path: str) -> str:
    return f"http://proxied.test:{urlsplit(site.base).port}{path}"


def echoed_headers(response: scrapy.http.Response) -> dict[str, str]:
    data: dict[str, Any] = json.loads(response.css("#echo::text").get(""))
    headers: dict[str, str] = data["headers"]
    return headers


def record_servers(spider: RecordingSpider, response: scrapy.http.Response) -> list[Any]:
    """A ``then`` hook: keep the command lines and proxy variables of the
    pool's servers while they run (a request is in flight on each dedicated
    one)."""
    pool = runtime_of(spider.crawler).pool
    assert pool is not None
    for pid in pool.server_pids():
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        proxy = next((v[11:] for v in environ if v.startswith(b"http_proxy=")), None)
        spider.servers = [*getattr(spider, "servers", []), (argv, proxy)]  # type: ignore[attr-defined]
    return []


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_each_profile_goes_through_its_own_proxy_and_no_other_request_does(
    site: SiteServer,
    tmp_path: Path,
    proxies: tuple[ProxyServer, ProxyServer],
    browser: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alpha, beta = proxies
    open_name, auth_name, plain = f"open-{token()}", f"auth-{token()}", f"plain-{token()}"
    write_profile(tmp_path, open_name, identity={"proxy": {"server": alpha.url}})
    write_profile(tmp_path, auth_name, identity={
        "proxy": {"server": beta.url, "username": "u", "password": PASSWORD},
    })  # fmt: skip
    write_profile(tmp_path, plain, identity={"userAgent": "PlainBot/1.0"})
    requests = [
        scrapy.Request(proxied_url(site, f"/echo-html?{name}&i={i}"),
                       meta={"cdp_profile": name, "then": record_servers})
        for name in (open_name, auth_name)
        for i in range(3)
    ] + [
        scrapy.Request(site.url(f"/echo-html?{plain}&i={i}"), meta={"cdp_profile": plain})
        for i in range(2)
    ] + [scrapy.Request(site.url("/echo-html?anonymous"), meta={"cdp": True})]  # fmt: skip
    caplog.set_level(logging.DEBUG)
    spider, crawler = await crawl(
        requests,
        {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_BROWSER": browser,
         "LOG_LEVEL": "DEBUG"},
    )  # fmt: skip
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert len(spider.responses) == 9
    for response in spider.responses:
        via = echoed_headers(response).get("X-Via-Proxy")
        if open_name in response.url:
            assert via == "alpha"
        elif auth_name in response.url:
            assert via == "beta"  # the 407 was answered with the profile's credentials
        else:
            assert via is None
    stats = crawler.stats.get_stats()
    # Both backends take the proxy per browser context (Lightpanda since
    # issue 29): one server, no dedicated one, no proxy in its environment,
    # the credentials never on its command line.
    assert "cdp_pool/dedicated_servers/started" not in stats
    servers = spider.servers  # type: ignore[attr-defined]
    if browser == "lightpanda":
        assert {proxy for _, proxy in servers} == {None}
    assert not any(PASSWORD.encode() in b"".join(argv) for argv, _ in servers)
    assert PASSWORD not in caplog.text
    assert PASSWORD not in json.dumps(stats, default=str)
    alpha.stop()
    beta.stop()
    # Only the open profile's pages went through alpha, each once (Chromium
    # asks for a favicon too).
    assert sorted(line for line in alpha.log if "/favicon.ico" not in line) == sorted(
        f"FORWARDED {proxied_url(site, f'/echo-html?{open_name}&i={i}')}" for i in range(3)
    )
    forwarded = [line for line in beta.log if line.startswith("FORWARDED")]
    assert sorted(line for line in forwarded if "/favicon.ico" not in line) == sorted(
        f"FORWARDED {proxied_url(site, f'/echo-html?{auth_name}&i={i}')}" for i in range(3)
    )


@pytest_twisted.ensureDeferred
async def test_lightpanda_runs_a_time_zone_profile_on_a_dedicated_server(
    site: SiteServer, tmp_path: Path
) -> None:
    tokyo, plain = f"tokyo-{token()}", f"plain-{token()}"
    write_profile(tmp_path, tokyo, session="t", identity={"timezoneId": "Asia/Tokyo"})
    write_profile(tmp_path, plain, session="p")
    requests = [
        scrapy.Request(site.url(f"/whoami?{name}&i={i}"), meta={"cdp_profile": name})
        for name in (tokyo, plain)
        for i in range(2)
    ]
    spider, crawler = await crawl(requests, {"CDP_POOL_PROFILES_DIR": str(tmp_path)})
    assert not spider.failures, [str(f.value) for f in spider.failures]
    for response in spider.responses:
        seen = json.loads(response.css("#js::text").get(""))
        expected = "Asia/Tokyo" if tokyo in response.url else None
        if expected:
            assert seen["timeZone"] == expected
        else:
            assert seen["timeZone"] != "Asia/Tokyo"
    assert crawler.stats.get_value("cdp_pool/dedicated_servers/started") == 1


@pytest_twisted.ensureDeferred
async def test_dedicated_servers_over_the_limit_take_turns(
    site: SiteServer, tmp_path: Path
) -> None:
    zones = ["Asia/Tokyo", "Europe/Paris", "America/New_York"]
    names = {f"zone{i}-{token()}": zone for i, zone in enumerate(zones)}
    for name, zone in names.items():
        write_profile(tmp_path, name, session=name, identity={"timezoneId": zone})
    requests = [
        scrapy.Request(site.url(f"/whoami?{name}&i={i}"), meta={"cdp_profile": name})
        for name in names
        for i in range(3)
    ]
    spider, crawler = await crawl(
        requests, {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_DEDICATED_SERVERS": 1}
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert len(spider.responses) == 9
    for response in spider.responses:
        name = response.url.split("?")[1].split("&")[0]
        assert json.loads(response.css("#js::text").get(""))["timeZone"] == names[name]
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/dedicated_servers/running_max"] == 1
    assert stats["cdp_pool/dedicated_servers/started"] >= 3
    assert stats["cdp_pool/dedicated_servers/pages"] == 9


class ProxiedSignInSpider(RecordingSpider):
    sign_ins: list[str] = []
    login_url = ""

    async def cdp_sign_in(self, profile: Any, page: Any) -> None:
        self.sign_ins.append(profile.name)
        await page.goto(self.login_url)


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_sign_in_hook_signs_in_through_the_profiles_proxy(
    site: SiteServer, tmp_path: Path, proxies: tuple[ProxyServer, ProxyServer], browser: str
) -> None:
    _, beta = proxies
    name = f"dana-{token()}"
    path = write_profile(tmp_path, name, identity={
        "proxy": {"server": beta.url, "username": "u", "password": PASSWORD},
    })  # fmt: skip
    ProxiedSignInSpider.sign_ins = []
    ProxiedSignInSpider.login_url = proxied_url(site, "/login?user=dana")
    requests = [
        scrapy.Request(proxied_url(site, f"/account?{name}&i={i}"), meta={"cdp_profile": name})
        for i in range(2)
    ]
    spider, _ = await crawl(
        requests,
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_SIGNED_OUT": "url:/login"},
        spider_cls=ProxiedSignInSpider,
    )  # fmt: skip
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert ProxiedSignInSpider.sign_ins == [name]
    assert [r.css("#account::text").get() for r in spider.responses] == ["dana", "dana"]
    cookies = json.loads(path.read_text())["cookies"]
    assert [(c["domain"], c["value"]) for c in cookies if c["name"] == "session"] == [
        ("proxied.test", "valid-dana")
    ]


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_dead_proxy_fails_only_its_profiles_requests(
    site: SiteServer, tmp_path: Path, proxies: tuple[ProxyServer, ProxyServer], browser: str
) -> None:
    alpha, _ = proxies
    dead, good = f"dead-{token()}", f"good-{token()}"
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    write_profile(tmp_path, dead, identity={"proxy": {"server": dead_proxy}})
    write_profile(tmp_path, good, identity={"proxy": {"server": alpha.url}})
    requests = [
        scrapy.Request(proxied_url(site, f"/echo-html?{name}&i={i}"), meta={"cdp_profile": name})
        for name in (dead, good)
        for i in range(2)
    ]
    spider, crawler = await crawl(
        requests, {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_BROWSER": browser}
    )
    assert sorted(r.url for r in spider.responses) == [
        proxied_url(site, f"/echo-html?{good}&i={i}") for i in range(2)
    ]
    assert all(echoed_headers(r)["X-Via-Proxy"] == "alpha" for r in spider.responses)
    assert sorted(f.request.url for f in spider.failures) == [
        proxied_url(site, f"/echo-html?{dead}&i={i}") for i in range(2)
    ]
    for failure in spider.failures:
        # The error names the request and the proxy.
        assert f"/echo-html?{dead}" in str(failure.value)
        assert f"through the profile's proxy {dead_proxy}" in str(failure.value)
    assert crawler.stats.get_value("finish_reason") == "finished"


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_wrong_proxy_credentials_are_tried_once_and_give_the_407(
    site: SiteServer, tmp_path: Path, proxies: tuple[ProxyServer, ProxyServer], browser: str
) -> None:
    _, beta = proxies
    name = f"wrong-{token()}"
    write_profile(tmp_path, name, identity={
        "proxy": {"server": beta.url, "username": "u", "password": "not-the-password"},
    })  # fmt: skip
    url = proxied_url(site, f"/echo-html?{name}")
    spider, _ = await crawl(
        [scrapy.Request(url, meta={"cdp_profile": name})],
        {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_BROWSER": browser},
    )
    assert [r.status for r in spider.responses] == [407]
    beta.stop()
    # Chromium: once without credentials, once with the wrong ones; Lightpanda
    # sends them with the first request (in its context's proxy URL). Then the
    # 407 stands.
    tries = 1 if browser == "lightpanda" else 2
    assert [line for line in beta.log if "/favicon.ico" not in line] == [f"DENIED {url}"] * tries


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_pages_scripts_go_through_the_authenticating_proxy_too(
    site: SiteServer, tmp_path: Path, proxies: tuple[ProxyServer, ProxyServer], browser: str
) -> None:
    _, beta = proxies
    name = f"scripted-{token()}"
    write_profile(tmp_path, name, identity={
        "proxy": {"server": beta.url, "username": "u", "password": PASSWORD},
    })  # fmt: skip
    urls = [proxied_url(site, f"/external-script?{name}&i={i}") for i in range(2)]
    spider, _ = await crawl(
        [scrapy.Request(url, meta={"cdp_profile": name}) for url in urls],
        {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_BROWSER": browser},
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    # The external script loaded through the proxy and ran.
    assert [r.css("#from-script::text").get() for r in spider.responses] == ["loaded"] * 2
    beta.stop()
    script = f"FORWARDED {proxied_url(site, '/external-script.js')}"
    assert beta.log.count(script) >= 1


@pytest_twisted.ensureDeferred
async def test_profiles_sharing_the_only_dedicated_server_cannot_keep_it_from_another(
    site: SiteServer, tmp_path: Path
) -> None:
    """One dedicated server (``CDP_POOL_DEDICATED_SERVERS = 1``); three
    profiles share one time zone, and their pages hang until staggered
    ``download_timeout``s of 2.5 s and more, so their server is never idle for
    long. A fourth profile, with another time zone and a 4 s
    ``download_timeout``, is served between them, in arrival order: its wait
    for the server's turn is not part of its ``download_timeout`` (its page
    was not started), and is not a failure of that profile."""
    hangers = [f"hanger{i}-{token()}" for i in range(3)]
    tokyo = f"tokyo-{token()}"
    for name in hangers:
        write_profile(tmp_path, name, identity={"timezoneId": "Europe/Paris"})
    write_profile(tmp_path, tokyo, identity={"timezoneId": "Asia/Tokyo"})
    requests = [
        scrapy.Request(site.url(f"/never?{name}&i={i}"),
                       meta={"cdp_profile": name, "download_timeout": 2.5 + n * 0.35})
        for i in range(2)  # 4 before: the hangers after the second round only added time
        for n, name in enumerate(hangers)
    ] + [
        # 4 s: its own server's start (after the other one's stop) is part of
        # its download_timeout; 2 s was once too short on CI's loaded machine
        scrapy.Request(site.url(f"/whoami?{tokyo}&i={i}"),
                       meta={"cdp_profile": tokyo, "download_timeout": 4})
        for i in range(3)
    ]  # fmt: skip
    spider, crawler = await crawl(
        requests,
        {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_DEDICATED_SERVERS": 1,
         "DOWNLOAD_TIMEOUT": 2, "CDP_POOL_PROFILE_MAX_FAILURES": 100},
    )  # fmt: skip
    assert sorted(r.url for r in spider.responses) == [
        site.url(f"/whoami?{tokyo}&i={i}") for i in range(3)
    ], [str(f.value) for f in spider.failures if "whoami" in str(f.value)]
    assert {f.request.meta["cdp_profile"] for f in spider.failures} == set(hangers)
    stats = crawler.stats.get_stats()
    assert f"cdp_pool/profile/{tokyo}/failures" not in stats
    assert stats["cdp_pool/dedicated_servers/running_max"] == 1


@pytest.mark.parametrize("no_proxy", [None, "*"])
@pytest_twisted.ensureDeferred
async def test_a_proxy_in_the_crawlers_environment_neither_stops_the_pool_nor_replaces_a_profiles(
    site: SiteServer,
    tmp_path: Path,
    proxies: tuple[ProxyServer, ProxyServer],
    monkeypatch: pytest.MonkeyPatch,
    no_proxy: str | None,
) -> None:
    """``http_proxy`` pointing nowhere in the crawler's environment (with or
    without ``no_proxy=*``): the pool still asks its own servers for
    ``/json/version`` directly, and the profile's page goes through the
    profile's proxy, not around it."""
    alpha, _ = proxies
    dead = f"http://127.0.0.1:{free_port()}"
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, dead)
    for name in ("no_proxy", "NO_PROXY"):
        if no_proxy is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, no_proxy)
    name = f"open-{token()}"
    write_profile(tmp_path, name, identity={"proxy": {"server": alpha.url}})
    spider, crawler = await crawl(
        [scrapy.Request(proxied_url(site, f"/echo-html?{name}"), meta={"cdp_profile": name})],
        {"CDP_POOL_PROFILES_DIR": str(tmp_path)},
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert [echoed_headers(r)["X-Via-Proxy"] for r in spider.responses] == ["alpha"]
    assert crawler.stats.get_value("finish_reason") == "finished"
