"""Save-back, signed-out handling and identity health, in real crawls."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import ProfileError, ProfileFileError, ProfileSignedOut
from tests.crawl import RecordingSpider, crawl
from tests.profiles import hits, profile_stats, temp_files, token, write_profile
from tests.servers import SiteServer

LOGIN: dict[str, str] = {}  # profile name -> URL that signs it in (set by each test)


def saved_cookies(path: Path) -> dict[str, Any]:
    return {c["name"]: c for c in json.loads(path.read_text())["cookies"]}


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_save_back_keeps_what_the_site_refreshed(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    name = f"saver-{token()}"
    path = write_profile(tmp_path, name, session=f"valid-{name}",
                         local_storage={"http://other.test": {"keep": "me"}})  # fmt: skip

    def then(spider: Any, response: Any) -> Any:
        yield scrapy.Request(site.url(f"/whoami?{name}"), meta={"cdp_profile": name})

    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/refresh?{name}"), meta={"cdp_profile": name, "then": then}),
         scrapy.Request(site.url(f"/local-storage?set=seen:{name}"), meta={"cdp_profile": name})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_PROFILE_SAVE_STATE": True},
    )  # fmt: skip
    assert not spider.failures
    refreshed = f"valid-{name}.r1"
    # The next request of the identity already sent the refreshed cookie...
    whoami = json.loads(spider.by_url("/whoami").css("#server::text").get(""))
    assert whoami["cookies"] == {"session": refreshed}
    # ... and the file keeps it after the crawl, with localStorage of both origins.
    session = saved_cookies(path)["session"]
    assert session["value"] == refreshed
    assert session["expires"] > 0  # Max-Age=3600: a persistent cookie
    origins = {o["origin"]: o["localStorage"] for o in json.loads(path.read_text())["origins"]}
    assert origins[site.base] == [{"name": "seen", "value": name}]
    assert origins["http://other.test"] == [{"name": "keep", "value": "me"}]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert temp_files(tmp_path) == []
    assert profile_stats(crawler.stats.get_stats(), name)["state_saves"] == 3


class SignInSpider(RecordingSpider):
    sign_ins: list[str] = []

    async def cdp_sign_in(self, profile: Any, page: Any) -> None:
        self.sign_ins.append(profile.name)
        await page.goto(LOGIN[profile.name])


async def sign_in_hook(profile: Any, page: Any) -> None:
    """A ``CDP_POOL_SIGN_IN`` hook: fills the site's sign-in form."""
    await page.goto(LOGIN[profile.name])
    await page.fill("#user", profile.name.split("-")[0])
    await page.click("#sign-in")
    await page.wait_for_selector("#account")


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_signed_out_identity_signs_in_once_and_retries(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    alice, bob = f"alice-{token()}", f"bob-{token()}"
    alice_file = write_profile(tmp_path, alice, session="expired-alice")
    write_profile(tmp_path, bob, session="valid-bob")
    LOGIN[alice] = site.url("/login?user=alice")
    SignInSpider.sign_ins = []
    requests = [
        scrapy.Request(site.url(f"/account?{name}&i={i}"), meta={"cdp_profile": name})
        for name in (alice, bob)
        for i in range(3)
    ]
    spider, crawler = await crawl(
        requests,
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_SIGNED_OUT": "url:/login"},
        spider_cls=SignInSpider,
    )  # fmt: skip
    assert not spider.failures
    assert SignInSpider.sign_ins == [alice]  # once, though three requests needed it
    accounts = sorted(r.css("#account::text").get() for r in spider.responses)
    assert accounts == ["alice", "alice", "alice", "bob", "bob", "bob"]
    assert all("/login" not in r.url for r in spider.responses)  # never scraped
    assert saved_cookies(alice_file)["session"]["value"] == "valid-alice"
    stats = profile_stats(crawler.stats.get_stats(), alice)
    assert (stats["signed_out"], stats["sign_ins"]) == (1, 1)


@pytest_twisted.ensureDeferred
async def test_sign_in_hook_setting_and_per_profile_rule(site: SiteServer, tmp_path: Path) -> None:
    carol = f"carol-{token()}"
    write_profile(tmp_path, carol, session="expired-carol",
                  identity={"signedOut": "css:form#login"})  # fmt: skip
    LOGIN[carol] = site.url("/login")
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/account?{carol}"), meta={"cdp_profile": carol})],
        {"CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_SIGN_IN": "tests.test_profiles_state.sign_in_hook"},
    )  # fmt: skip
    assert not spider.failures
    assert [r.css("#account::text").get() for r in spider.responses] == ["carol"]
    assert profile_stats(crawler.stats.get_stats(), carol)["sign_ins"] == 1


@pytest_twisted.ensureDeferred
async def test_signed_out_without_hook_fails_fast(site: SiteServer, tmp_path: Path) -> None:
    dave, erin = f"dave-{token()}", f"erin-{token()}"
    write_profile(tmp_path, dave, session="expired-dave")
    write_profile(tmp_path, erin, session="valid-erin")
    requests = [
        scrapy.Request(site.url(f"/account?{name}&i={i}"), meta={"cdp_profile": name})
        for name in (dave, erin)
        for i in range(3)
    ]
    spider, crawler = await crawl(
        requests,
        {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_SIGNED_OUT": {"url": "/login"}},
    )
    assert [r.css("#account::text").get() for r in spider.responses] == ["erin"] * 3
    assert len(spider.failures) == 3
    assert isinstance(spider.failures[0].value, ProfileSignedOut)
    for failure in spider.failures:
        assert failure.request.meta["cdp_profile"] == dave
        assert "profile signed out; no sign-in hook" in str(failure.value)
    # Only the first was sent; the others failed at once.
    assert sum(hits(site, f"/account?{dave}&i={i}") for i in range(3)) == 1
    stats = crawler.stats.get_stats()
    assert profile_stats(stats, dave)["retired"] == 1
    assert profile_stats(stats, dave)["failed_fast"] == 2


class UselessSignInSpider(RecordingSpider):
    async def cdp_sign_in(self, profile: Any, page: Any) -> None:
        await page.goto(LOGIN[profile.name])  # the sign-in page, but nobody signs in


@pytest_twisted.ensureDeferred
async def test_a_sign_in_that_does_not_help_retires_the_identity(
    site: SiteServer, tmp_path: Path
) -> None:
    frank = f"frank-{token()}"
    write_profile(tmp_path, frank, session="expired-frank")
    LOGIN[frank] = site.url("/login")
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/account?{frank}"), meta={"cdp_profile": frank})],
        {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_SIGNED_OUT": "css:#login"},
        spider_cls=UselessSignInSpider,
    )
    assert not spider.responses
    assert [str(f.value) for f in spider.failures] == [
        f"profile {frank!r}: profile signed out; still signed out after signing in"
    ]
    assert profile_stats(crawler.stats.get_stats(), frank)["sign_ins"] == 1


@pytest_twisted.ensureDeferred
async def test_consecutive_failures_retire_an_identity(site: SiteServer, tmp_path: Path) -> None:
    gina = f"gina-{token()}"
    write_profile(tmp_path, gina, session="valid-gina")
    requests = [
        scrapy.Request(site.url(f"/status/403?{gina}&i={i}"), meta={"cdp_profile": gina})
        for i in range(5)
    ]
    spider, crawler = await crawl(
        requests, {"CDP_POOL_PROFILES_DIR": str(tmp_path), "CDP_POOL_PROFILE_MAX_FAILURES": 2}
    )
    assert [r.status for r in spider.responses] == [403, 403]
    assert len(spider.failures) == 3
    for failure in spider.failures:
        assert "retired after 2 consecutive failures" in str(failure.value)
        assert "CDP_POOL_PROFILE_MAX_FAILURES = 2; last: HTTP 403" in str(failure.value)
    stats = profile_stats(crawler.stats.get_stats(), gina)
    assert (stats["requests"], stats["failures"], stats["failed_fast"]) == (2, 2, 3)


@pytest_twisted.ensureDeferred
async def test_bad_profile_files_fail_their_requests_by_name_and_others_go_on(
    site: SiteServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = f"secret-{token()}"
    good, broken, missing, typo = (f"{n}-{token()}" for n in ("good", "broken", "missing", "typo"))
    write_profile(tmp_path, good, session=secret)
    cut_short = '{"cookies": [{"name": "s", "value": "%s"' % secret
    (tmp_path / f"{broken}.json").write_text(cut_short)
    write_profile(tmp_path, typo, session=secret, identity={"userAgnet": "x"})
    requests = [
        scrapy.Request(site.url(f"/whoami?{name}&i={i}"), meta={"cdp_profile": name})
        for name in (good, broken, missing, typo)
        for i in range(2)
    ]
    caplog.set_level(logging.DEBUG)
    spider, crawler = await crawl(requests, {"CDP_POOL_PROFILES_DIR": str(tmp_path),
                                             "LOG_LEVEL": "DEBUG"})  # fmt: skip
    assert sorted(r.url for r in spider.responses) == [
        site.url(f"/whoami?{good}&i=0"), site.url(f"/whoami?{good}&i=1"),
    ]  # fmt: skip
    problems: dict[str, set[str]] = {}
    for failure in spider.failures:
        assert isinstance(failure.value, ProfileFileError)
        problems.setdefault(failure.request.meta["cdp_profile"], set()).add(str(failure.value))
    assert problems == {
        broken: {(f"profile {broken!r}: {tmp_path / broken}.json: is not valid JSON: "
                  f"Expecting ',' delimiter at line 1 column {len(cut_short) + 1}")},
        missing: {(f"profile {missing!r}: {tmp_path / missing}.json: does not exist (expected a "
                   "Playwright storageState file; create one with 'scrapy-cdp-pool profile "
                   "create')")},
        typo: {(f"profile {typo!r}: {tmp_path / typo}.identity.json: is invalid: unknown key "
                "'userAgnet'; allowed: userAgent, viewport, locale, timezoneId, "
                "extraHTTPHeaders, geolocation, proxy, deviceScaleFactor, isMobile, signedOut")},
    }  # fmt: skip
    # Each problem logged once (at start-up for files that exist, at first use
    # for the missing one), and no cookie value anywhere in the logs.
    for name in (broken, missing, typo):
        assert sum(name in r.getMessage() for r in caplog.records if r.levelname == "WARNING") == 1
    assert secret not in caplog.text
    assert isinstance(spider.failures[0].value, ProfileError)
    assert profile_stats(crawler.stats.get_stats(), broken)["failed_fast"] == 2


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_signed_out_is_checked_before_the_actions(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    """A request whose action waits for something only a signed-in page has
    lands on the login page: the signed-out rule is checked right after
    navigation, before the action, so the hook signs in and the retry runs
    the action signed in (before: the action timed out, the hook never ran)."""
    name = f"gina-{token()}"
    write_profile(tmp_path, name, session="expired-gina")
    LOGIN[name] = site.url("/login?user=gina")
    SignInSpider.sign_ins = []
    actions = [["wait_for_selector", "#account", {"timeout": 5}]]
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/account?{name}"),
                        meta={"cdp_profile": name, "cdp_actions": actions})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_SIGNED_OUT": "css:#user"},
        spider_cls=SignInSpider,
    )  # fmt: skip
    assert not spider.failures, spider.failures
    assert SignInSpider.sign_ins == [name]
    [response] = spider.responses
    assert response.css("#account::text").get() == "gina"
    assert response.meta["cdp_results"] == [None]
    assert profile_stats(crawler.stats.get_stats(), name)["signed_out"] == 1


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_saved_state_keeps_cookies_within_a_browsers_caps(
    site: SiteServer, tmp_path: Path, browser: str
) -> None:
    """A page of the profile writes 500 cookies and one of 5000 bytes: the
    saved state keeps at most 180 of a domain, none past 4096 bytes, and
    fewer than 8000 bytes of them, so the profile's next request is not
    answered 400 for its ``Cookie`` header (on Lightpanda, which caps
    nothing, the saved 48 KB came back on every later request of the
    profile; fresh-user trial). On Lightpanda the session cookie, held
    first, is kept; Chromium's own store already pushed it out (its cap
    drops the least recently used, as Playwright's storageState shows)."""
    name = f"flood-{token()}"
    path = write_profile(tmp_path, name, session=f"valid-{name}")

    def then(spider: Any, response: Any) -> Any:
        yield scrapy.Request(site.url("/flood/count?i=0"), meta={"cdp_profile": name})

    spider, _ = await crawl(
        [scrapy.Request(site.url("/flood/page?n=500"), meta={"cdp_profile": name, "then": then})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILES_DIR": str(tmp_path),
         "CDP_POOL_PROFILE_SAVE_STATE": True},
    )  # fmt: skip
    assert not spider.failures, spider.failures
    counted = spider.by_url("/flood/count")
    assert counted.status == 200
    assert 0 < int(counted.css("#count::text").get("0")) <= 180
    cookies = json.loads(path.read_text())["cookies"]
    if browser == "lightpanda":  # Chromium's own cap pushes out its oldest, as a browser does
        assert "session" in {c["name"] for c in cookies}
    assert "big" not in {c["name"] for c in cookies}
    assert len(cookies) <= 180
    assert sum(len(c["name"]) + 1 + len(c["value"]) + 2 for c in cookies) <= 8000
