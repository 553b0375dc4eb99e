"""Profile files without a crawl: loading, validation errors that name the file
and the problem (never a value), atomic save-back, the settings, the rules."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool.errors import ProfileFileError
from scrapy_cdp_pool.profiles.health import HealthBook
from scrapy_cdp_pool.profiles.options import context_options, playwright_context_args
from scrapy_cdp_pool.profiles.store import ProfileStore
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.settings.signed_out import SignedOutRule, parse_signed_out
from tests.profiles import MOZILLA_UA, cookie, write_profile

SECRET = "s3cr3t-cookie-value"  # noqa: S105 - a test value


def test_profile_loads_as_context_options(tmp_path: Path) -> None:
    write_profile(
        tmp_path, "alice", session=SECRET,
        local_storage={"http://127.0.0.1:1": {"token": "t"}},
        identity={"userAgent": MOZILLA_UA, "locale": "fr-FR", "timezoneId": "Europe/Paris",
                  "viewport": {"width": 800, "height": 600}, "deviceScaleFactor": 2,
                  "isMobile": True, "extraHTTPHeaders": {"X-Team": "a"},
                  "geolocation": {"latitude": 48.8, "longitude": 2.3},
                  "proxy": {"server": "http://proxy:3128", "username": "u", "password": "p"}},
    )  # fmt: skip
    profile = ProfileStore(tmp_path).load("alice")
    assert SECRET not in repr(profile)
    options = context_options(profile, save_state=True)
    assert options.name == "alice"
    assert [c["value"] for c in options.cookies] == [SECRET]
    assert options.local_storage == (("http://127.0.0.1:1", (("token", "t"),)),)
    assert options.user_agent == MOZILLA_UA
    assert options.viewport == (800, 600)
    assert options.geolocation == (48.8, 2.3, 0)
    assert options.extra_http_headers == (("X-Team", "a"),)
    assert (options.proxy_server, options.proxy_username) == ("http://proxy:3128", "u")
    assert options.save_state
    assert options.requirements() == {"user_agent_mozilla", "timezone", "proxy", "geolocation"}
    args = playwright_context_args(profile)
    assert args["user_agent"] == MOZILLA_UA
    assert args["timezone_id"] == "Europe/Paris"
    assert args["storage_state"]["cookies"][0]["value"] == SECRET


def test_a_profile_needs_only_a_storage_state(tmp_path: Path) -> None:
    write_profile(tmp_path, "bob", session="x")
    options = context_options(ProfileStore(tmp_path).load("bob"))
    assert options.requirements() == frozenset()
    assert options.user_agent is None


BAD_STATES: list[tuple[str, str]] = [
    ('{"cookies": [', "is not valid JSON"),
    ('["cookies"]', "storage state: expected an object, got a list"),
    ('{"cookies": {}}', "cookies: expected a list, got an object"),
    ('{"cookies": [{"value": "%s", "domain": "a"}]}' % SECRET, "cookies[0]: missing 'name'"),
    ('{"cookies": [{"name": "n", "value": 7, "domain": "a"}]}',
     "cookies[0].value: expected a string, got an integer"),
    ('{"cookies": [{"name": "n", "value": "%s", "domain": "a", "sameSite": "lax"}]}' % SECRET,
     "cookies[0].sameSite: expected one of Strict, Lax, None"),
    ('{"cookies": [{"name": "n", "value": "v", "domain": "a", "expires": "never"}]}',
     "cookies[0].expires: expected a number"),
    ('{"origins": [{"origin": "example.com", "localStorage": []}]}',
     "origins[0].origin: expected an origin like https://example.com"),
    ('{"origins": [{"origin": "https://a.b", "localStorage": [{"name": "k"}]}]}',
     "origins[0].localStorage[0].value: expected a string, got null"),
    ('{"cookies": [], "extra": 1}', "unknown keys ['extra']"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "problem"), BAD_STATES)
def test_bad_storage_state_names_file_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "alice.json").write_text(text)
    with pytest.raises(ProfileFileError) as raised:
        ProfileStore(tmp_path).load("alice")
    message = str(raised.value)
    assert str(tmp_path / "alice.json") in message
    assert problem in message
    assert SECRET not in message


BAD_IDENTITIES: list[tuple[dict[str, Any], str]] = [
    ({"userAgnet": "x"}, "unknown key 'userAgnet'; allowed: userAgent, viewport"),
    ({"viewport": {"width": "800", "height": 600}},
     "viewport.width: expected an integer > 0, got a string"),
    ({"viewport": {"width": 800}}, "viewport: missing 'height'"),
    ({"proxy": {"server": "http://p:1", "password": 12345}},
     "proxy.password: expected a string, got an integer"),
    ({"proxy": {"username": "u"}}, "proxy: missing 'server'"),
    ({"proxy": {"server": "proxy:3128"}}, "proxy.server: 'proxy:3128' is not a proxy URL"),
    ({"proxy": {"server": "ftp://proxy:3128"}}, "expected scheme://host:port with scheme http"),
    ({"proxy": {"server": "http://proxy:3128?a=b"}}, "'http://proxy:3128?a=b' is not a proxy URL"),
    ({"proxy": {"server": "http://proxy:3128/"}}, "and nothing after the port"),
    ({"proxy": {"server": "http://proxy"}}, "'http://proxy' is not a proxy URL"),
    ({"proxy": {"server": "http://proxy:3128", "password": "x"}},
     "proxy.password: given without proxy.username"),
    ({"proxy": {"server": "http://proxy:3128", "username": "u", "password": "a\nb"}},
     "proxy.password: holds a control character"),
    ({"timezoneId": "localtime"}, "timezoneId: 'localtime' is not an IANA time zone"),
    ({"proxy": {"server": "http://u:hunter2@proxy:3128"}},
     "proxy.server: credentials in the URL; put them in proxy.username and proxy.password"),
    ({"geolocation": {"latitude": 95, "longitude": 0}}, "geolocation.latitude: expected a number"),
    ({"extraHTTPHeaders": {"X-Token": 5}}, "extraHTTPHeaders['X-Token']: expected a string"),
    ({"isMobile": "yes"}, "isMobile: expected a boolean, got a string"),
    ({"signedOut": "login"}, "signedOut: 'login' is not a signed-out rule"),
    ({"timezoneId": ""}, "timezoneId: expected a non-empty string, got an empty one"),
    ({"timezoneId": "Mars/Olympus"}, "timezoneId: 'Mars/Olympus' is not an IANA time zone"),
]  # fmt: skip


@pytest.mark.parametrize(("identity", "problem"), BAD_IDENTITIES)
def test_bad_identity_file_names_file_and_problem(
    tmp_path: Path, identity: dict[str, Any], problem: str
) -> None:
    write_profile(tmp_path, "alice", session=SECRET, identity=identity)
    with pytest.raises(ProfileFileError) as raised:
        ProfileStore(tmp_path).load("alice")
    message = str(raised.value)
    assert str(tmp_path / "alice.identity.json") in message
    assert problem in message
    assert SECRET not in message
    assert "12345" not in message
    assert "hunter2" not in message


def test_missing_profile_and_bad_name(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    with pytest.raises(ProfileFileError, match=r"carol\.json: does not exist"):
        store.load("carol")
    with pytest.raises(ProfileFileError, match="is not a profile name"):
        store.load("../etc/passwd")


def test_check_lists_every_problem_once(tmp_path: Path) -> None:
    write_profile(tmp_path, "alice", session="ok")
    (tmp_path / "bob.json").write_text("{nope")
    write_profile(tmp_path, "dave", session="ok", identity={"color": "blue"})
    (tmp_path / "erin.identity.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("not a profile")
    store = ProfileStore(tmp_path)
    assert store.names() == ["alice", "bob", "dave"]
    problems = {(e.name, e.path.name): e.problem for e in store.check()}
    assert set(problems) == {
        ("bob", "bob.json"), ("dave", "dave.identity.json"), ("erin", "erin.identity.json"),
    }  # fmt: skip
    assert "is not valid JSON" in problems["bob", "bob.json"]
    assert "unknown key 'color'" in problems["dave", "dave.identity.json"]
    assert "has no storage state (erin.json)" in problems["erin", "erin.identity.json"]


def test_save_state_is_atomic_with_mode_0600(tmp_path: Path) -> None:
    write_profile(tmp_path, "alice", session="old")
    store = ProfileStore(tmp_path)
    assert store.load("alice").storage_state["cookies"][0]["value"] == "old"
    state = {"cookies": [cookie("session", "new", expires=2_000_000_000.5)], "origins": []}
    path = store.save_state("alice", state)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == state
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alice.json"]  # no temp file left
    assert store.load("alice").storage_state == state  # read again: it changed on disk

    with pytest.raises(ProfileFileError, match=r"cannot be saved: cookies\[0\]: missing 'name'"):
        store.save_state("alice", {"cookies": [{"value": "v", "domain": "d"}], "origins": []})
    assert json.loads(path.read_text()) == state  # untouched


def test_signed_out_rules() -> None:
    page = HtmlResponse("https://x.test/login?next=/a", body=b"<form id=login></form>")
    other = HtmlResponse("https://x.test/account", body=b"<h1>me</h1>")
    by_url = parse_signed_out("url:/login")
    by_css = parse_signed_out("css:form#login")
    both = parse_signed_out({"url": "/sign-in$", "selector": "#login"})
    assert by_url == SignedOutRule(url="/login")
    assert by_css == SignedOutRule(selector="form#login")
    for rule in (by_url, by_css, both):
        assert rule is not None
        assert rule.matches(page)
        assert not rule.matches(other)
    assert parse_signed_out(None) is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CDP_POOL_SIGNED_OUT", "/login", "CDP_POOL_SIGNED_OUT: '/login' is not a signed-out rule"),
        ("CDP_POOL_SIGNED_OUT", "url:(", "CDP_POOL_SIGNED_OUT: '(' is not a regular expression"),
        ("CDP_POOL_SIGNED_OUT", "css:a[", "CDP_POOL_SIGNED_OUT: 'a[' is not a CSS selector"),
        ("CDP_POOL_SIGN_IN", "nowhere.sign_in", "CDP_POOL_SIGN_IN: 'nowhere.sign_in' cannot be"),
        ("CDP_POOL_SIGN_IN", 3, "CDP_POOL_SIGN_IN: 3 is not a callable or its import path"),
        ("CDP_POOL_PROFILE_MAX_FAILURES", 0, "CDP_POOL_PROFILE_MAX_FAILURES: 0 is not an integer"),
        ("CDP_POOL_PROFILE_SAVE_STATE", "maybe", "CDP_POOL_PROFILE_SAVE_STATE: 'maybe' is not"),
        ("CDP_POOL_PROFILES_DIR", 5, "CDP_POOL_PROFILES_DIR: 5 is not a file path"),
    ],
)
def test_invalid_profile_settings_are_named(name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace("[", r"\[")):
        PoolConfig.from_settings(Settings({name: value}))


def test_profile_settings(tmp_path: Path) -> None:
    config = PoolConfig.from_settings(Settings())
    assert (config.profiles.dir, config.profiles.save_state) == (None, False)
    assert (config.profiles.signed_out, config.profiles.sign_in, config.profiles.max_failures) == (
        None,
        None,
        5,
    )
    config = PoolConfig.from_settings(Settings({
        "CDP_POOL_PROFILES_DIR": tmp_path, "CDP_POOL_PROFILE_SAVE_STATE": "True",
        "CDP_POOL_SIGNED_OUT": {"url": "/login"}, "CDP_POOL_SIGN_IN": "json.dumps",
        "CDP_POOL_PROFILE_MAX_FAILURES": "3",
    }))  # fmt: skip
    assert config.profiles.dir == str(tmp_path)
    assert config.profiles.save_state is True
    assert config.profiles.signed_out == SignedOutRule(url="/login")
    assert config.profiles.sign_in == "json.dumps"
    assert config.profiles.max_failures == 3


def test_health_counts_consecutive_failures_and_keeps_the_first_retirement() -> None:
    stats = get_crawler().stats
    assert stats is not None
    book = HealthBook(stats, max_failures=2)
    assert book.failed("a", "HTTP 403") is None
    book.succeeded("a")  # a success resets the run
    assert book.failed("a", "DownloadTimeoutError") is None
    reason = book.failed("a", "HTTP 429")
    assert reason == (
        "retired after 2 consecutive failures (CDP_POOL_PROFILE_MAX_FAILURES = 2; last: HTTP 429)"
    )
    assert book.retire("a", "profile signed out") == reason
    assert book.retired("a") == reason
    assert book.retired("b") is None
    assert stats.get_stats() == {
        "cdp_pool/profile/a/failures": 3, "cdp_pool/profile/a/retired": 1,
        "cdp_pool/profiles_retired": 1,
    }  # fmt: skip


def test_a_hand_written_file_other_users_can_read_is_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A profile written by hand with the umask's 0644 (cookies, a proxy
    password) is used, with one WARNING per file naming it and the fix, never
    a value; a 0600 file gets none."""
    write_profile(
        tmp_path, "carol", session=SECRET,
        identity={"proxy": {"server": "http://proxy:3128", "username": "u", "password": SECRET}},
    )  # fmt: skip
    write_profile(tmp_path, "dave", session=SECRET)
    state, identity = ProfileStore(tmp_path).paths("carol")
    for path in (state, identity):
        path.chmod(0o644)
    ProfileStore(tmp_path).paths("dave")[0].chmod(0o600)
    store = ProfileStore(tmp_path)
    store.load("carol")
    store.load("dave")
    state.touch()  # changed on disk: read again, not warned again
    store.load("carol")
    warnings = [r.getMessage() for r in caplog.records if "other local users" in r.getMessage()]
    assert len(warnings) == 2
    assert {str(state), str(identity)} == {w.split(" can be read")[0].split()[-1] for w in warnings}
    assert all("chmod 600" in w for w in warnings)
    assert not any(SECRET in r.getMessage() for r in caplog.records)


def test_a_saved_state_is_held_to_a_browsers_cookie_caps(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What ``profile create`` and a sign-in hook read from Playwright goes
    through ``save_state`` too: 1,024 cookies of a host (the fresh-user
    trial's, a 48 KB ``Cookie`` header answered 400 on Lightpanda, which caps
    nothing) are saved within a browser's caps, with one WARNING naming the
    profile."""
    cookies = [cookie("big", "x" * 5000), *(cookie(f"c{i:04}", "v" * 24) for i in range(1024))]
    with caplog.at_level("WARNING", logger="scrapy_cdp_pool.render.cookies"):
        ProfileStore(tmp_path).save_state("alice", {"cookies": cookies, "origins": []})
    saved = json.loads((tmp_path / "alice.json").read_text())["cookies"]
    assert "big" not in {c["name"] for c in saved}
    assert 0 < len(saved) <= 180
    assert sum(len(c["name"]) + len(c["value"]) + 3 for c in saved) <= 8000
    assert [c["name"] for c in saved] == [f"c{i:04}" for i in range(len(saved))]  # first kept
    [record] = caplog.records
    assert "Profile 'alice':" in record.getMessage()
    assert f"{len(cookies) - len(saved)} cookies are not saved" in record.getMessage()
