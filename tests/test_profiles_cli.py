"""``scrapy-cdp-pool profile create`` and ``profile check``, as a user runs them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from scrapy_cdp_pool.tools.cli import main
from tests.profiles import MOZILLA_UA, token, write_profile
from tests.servers import ROOT, ProxyServer, SiteServer

CONSOLE_SCRIPT = Path(sys.executable).parent / "scrapy-cdp-pool"

SIGN_IN_SCRIPT = """
async def sign_in(page):
    await page.fill("#user", "zoe")
    await page.click("#sign-in")
    await page.wait_for_selector("#account")
"""


def create(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONSOLE_SCRIPT), "profile", "create", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_create_runs_the_sign_in_script_and_writes_the_files(
    site: SiteServer, tmp_path: Path
) -> None:
    script = tmp_path / "sign_in.py"
    script.write_text(SIGN_IN_SCRIPT)
    run = create(
        "zoe", "--url", site.url("/login"), "--script", str(script), "--dir", str(tmp_path),
        "--user-agent", "ZoeBot/1.0", "--locale", "fr-FR", "--viewport", "800x600",
        "--header", "X-Team: red", "--signed-out", "css:form#login",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    state_path, identity_path = tmp_path / "zoe.json", tmp_path / "zoe.identity.json"
    assert run.stdout.strip() == f"profile 'zoe': wrote {state_path}, {identity_path}"
    cookies = {c["name"]: c["value"] for c in json.loads(state_path.read_text())["cookies"]}
    assert cookies == {"session": "valid-zoe"}
    assert json.loads(identity_path.read_text()) == {
        "userAgent": "ZoeBot/1.0", "locale": "fr-FR", "viewport": {"width": 800, "height": 600},
        "extraHTTPHeaders": {"X-Team": "red"}, "signedOut": "css:form#login",
    }  # fmt: skip
    for path in (state_path, identity_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_create_without_script_saves_what_the_page_set(site: SiteServer, tmp_path: Path) -> None:
    run = create("yann", "--url", site.url("/login?user=yann"), "--dir", str(tmp_path))
    assert run.returncode == 0, run.stderr
    cookies = json.loads((tmp_path / "yann.json").read_text())["cookies"]
    assert [(c["name"], c["value"]) for c in cookies] == [("session", "valid-yann")]
    assert not (tmp_path / "yann.identity.json").exists()


def test_create_on_lightpanda_takes_the_time_zone_for_the_whole_server(
    site: SiteServer, tmp_path: Path
) -> None:
    script = tmp_path / "zone.py"
    script.write_text(
        "async def sign_in(page):\n"
        "    await page.evaluate(\"localStorage.setItem('tz',"
        ' Intl.DateTimeFormat().resolvedOptions().timeZone)")\n'
    )
    run = create("tokyo", "--url", site.url("/login"), "--script", str(script),
                 "--dir", str(tmp_path), "--browser", "lightpanda",
                 "--timezone", "Asia/Tokyo")  # fmt: skip
    assert run.returncode == 0, run.stderr
    origins = json.loads((tmp_path / "tokyo.json").read_text())["origins"]
    assert origins == [
        {"origin": site.base, "localStorage": [{"name": "tz", "value": "Asia/Tokyo"}]}
    ]
    assert json.loads((tmp_path / "tokyo.identity.json").read_text()) == {
        "timezoneId": "Asia/Tokyo"
    }


@pytest.mark.parametrize("browser", [None, "chromium"])
def test_create_through_the_profiles_proxy_with_its_credentials(
    site: SiteServer, tmp_path: Path, browser: str | None
) -> None:
    """By default on Lightpanda (started with the proxy, as a crawl's dedicated
    server), or on Chromium (a per-context proxy); the password comes from
    the environment, and wrong credentials fail the command."""
    password = "pw-" + token()
    proxy = ProxyServer("gamma", auth=f"u:{password}")
    try:
        url = f"http://proxied.test:{urlsplit(site.base).port}/login?user=pia"
        args = ["--url", url, "--dir", str(tmp_path), "--proxy", proxy.url,
                "--proxy-username", "u", *(["--browser", browser] if browser else [])]  # fmt: skip
        run = create("pia", *args, env={"CDP_POOL_PROXY_PASSWORD": password})
        assert run.returncode == 0, run.stderr
        assert password not in run.stdout + run.stderr
        cookies = json.loads((tmp_path / "pia.json").read_text())["cookies"]
        assert [(c["domain"], c["value"]) for c in cookies] == [("proxied.test", "valid-pia")]
        identity = json.loads((tmp_path / "pia.identity.json").read_text())
        assert identity == {"proxy": {"server": proxy.url, "username": "u", "password": password}}
    finally:
        proxy.stop()
    other = ProxyServer("delta", auth=f"u:{password}")  # a log for the wrong attempt alone
    try:
        args[args.index(proxy.url)] = other.url
        wrong = create("pib", *args, env={"CDP_POOL_PROXY_PASSWORD": "wrong"})
        assert wrong.returncode == 1
        # Lightpanda loads the 407 page (refused); Chromium fails the navigation.
        refused = "the proxy refused the profile's credentials (407)"
        not_through = f"did not load through the profile's proxy {other.url}"
        assert refused in wrong.stderr or not_through in wrong.stderr
        assert not (tmp_path / "pib.json").exists()
    finally:
        other.stop()
    # Lightpanda sends the credentials with the first request; Chromium once
    # without, once with them. Never more (a provider may lock the account).
    denied = [line for line in other.log if line.startswith("DENIED") and "favicon" not in line]
    assert len(denied) == (1 if browser is None else 2)


def test_create_refuses_what_the_browser_cannot_honour(site: SiteServer, tmp_path: Path) -> None:
    run = create("moz", "--url", site.url("/login"), "--dir", str(tmp_path),
                 "--browser", "lightpanda", "--user-agent", MOZILLA_UA)  # fmt: skip
    assert run.returncode == 1
    assert 'cannot honour a user agent containing "Mozilla"; use --browser chromium' in run.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["../x", "--url", "http://x"], "'../x' is not a profile name"),
        (["a", "--url", "http://x", "--viewport", "wide"], "--viewport 'wide': expected"),
        (["a", "--url", "http://x", "--header", "nocolon"], "--header 'nocolon': expected"),
        (["a", "--url", "http://x", "--signed-out", "login"], "signedOut: 'login' is not a"),
        (["a", "--url", "http://x", "--script", "/nonexistent.py"], "no such file"),
    ],
)
def test_create_rejects_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["profile", "create", *args, "--dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_check_validates_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = token()
    write_profile(tmp_path, "good", session=secret)
    write_profile(tmp_path, "typo", session=secret, identity={"locale": 5})
    assert main(["profile", "check", "--dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out.strip() == f"{tmp_path}: 2 profile(s), 1 problem(s)"
    assert err.strip() == (
        f"{tmp_path / 'typo.identity.json'}: is invalid: locale: expected a non-empty string, "
        "got an integer"
    )
    assert secret not in out + err
    (tmp_path / "typo.identity.json").unlink()
    assert main(["profile", "check", "--dir", str(tmp_path)]) == 0
    assert main(["profile", "check", "--dir", str(tmp_path / "nowhere")]) == 1
    assert "is not a directory" in capsys.readouterr().err
