"""A remote endpoint's credentials and token, and a Redis password however it
is written, never reach logs, stats, errors or the status file.

Found by a fresh-user trial: ``CDP_POOL_ENDPOINTS = ["http://u:pw@host/?token=t"]``
was logged whole at start and in every status line, written 23 times in a
0644 status file, and printed whole in the errors of a dead endpoint; a
Redis password holding an unencoded ``#``, ``/`` or ``?`` was shown (the URL
did not parse as having a password), and redis-py's own message about it
repeated the password.
"""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import pytest_twisted
import scrapy
from scrapy.settings import Settings

from scrapy_cdp_pool.cluster.install import check_redis
from scrapy_cdp_pool.messages import redact_url, scrub_secrets
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.crawl import crawl
from tests.servers import SiteServer, free_port

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

SECRETS = ("EPs3cret", "EPtok")


def with_secrets(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    return urlunsplit(
        (parts.scheme, f"u:EPs3cret@{parts.netloc}", parts.path or "/", "token=EPtok", "")
    )


def everything_said(caplog: pytest.LogCaptureFixture, crawler: Any, spider: Any) -> str:
    return "\n".join(
        [
            caplog.text,
            *(str(r.exc_info[1]) for r in caplog.records if r.exc_info and r.exc_info[1]),
            json.dumps(crawler.stats.get_stats(), default=str),
            *(repr(f.value) for f in spider.failures),
        ]
    )


@pytest_twisted.ensureDeferred
async def test_an_endpoints_credentials_stay_out_of_logs_stats_and_the_status_file(
    site: SiteServer,
    lightpanda_endpoint: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    status = tmp_path / "status.jsonl"
    caplog.set_level(logging.DEBUG)
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/js?n=1&secret={i}"), meta={"cdp": True}) for i in range(3)],
        {
            "CDP_POOL_ENDPOINTS": [with_secrets(lightpanda_endpoint)],
            "CDP_POOL_STATUS_FILE": str(status),
            "CDP_POOL_STATUS_INTERVAL_SECONDS": 0.2,
            # below Lightpanda's own cap: the endpoint is named in a warning too
            "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
        },
    )
    assert len(spider.responses) == 3, spider.failures
    assert "CDP pool ready" in caplog.text
    assert "--http-max-response-size" in caplog.text
    written = status.read_text()
    assert '"endpoint"' in written  # the status file names the endpoint...
    said = everything_said(caplog, crawler, spider) + written
    for secret in SECRETS:
        assert secret not in said  # ...without its password or token
    assert stat.S_IMODE(status.stat().st_mode) == 0o600


@pytest_twisted.ensureDeferred
async def test_a_dead_endpoints_credentials_stay_out_of_its_errors(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dead = with_secrets(f"ws://127.0.0.1:{free_port()}/devtools/browser")
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js?n=1&dead"), meta={"cdp": True})],
        {"CDP_POOL_ENDPOINTS": [dead], "CDP_POOL_CONNECT_TIMEOUT_SECONDS": 2},
    )
    assert crawler.stats.get_value("finish_reason") == "cdp_pool_unavailable"
    assert spider.failures
    said = everything_said(caplog, crawler, spider)
    assert "127.0.0.1" in said  # the endpoint is named...
    for secret in SECRETS:
        assert secret not in said  # ...without its secrets


@pytest.mark.parametrize("setting", ["CDP_POOL_STATUS_FILE", "CDP_POOL_FAILURES_FILE"])
@pytest_twisted.ensureDeferred
async def test_an_existing_status_or_failures_file_others_could_read_is_made_private(
    site: SiteServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, setting: str
) -> None:
    written = tmp_path / "written.jsonl"
    written.write_text("")
    written.chmod(0o644)
    caplog.set_level(logging.INFO)
    await crawl(
        [scrapy.Request(site.url("/status/404?private"), meta={"cdp": True})],
        {setting: str(written), "HTTPERROR_ALLOW_ALL": False},
    )
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert f"{setting} {written} was readable by other users" in caplog.text


@pytest.mark.parametrize("setting", ["CDP_POOL_STATUS_FILE", "CDP_POOL_FAILURES_FILE"])
@pytest_twisted.ensureDeferred
async def test_a_new_status_or_failures_file_is_created_private(
    site: SiteServer, tmp_path: Path, setting: str
) -> None:
    written = tmp_path / "new.jsonl"
    await crawl(
        [scrapy.Request(site.url("/status/404?new"), meta={"cdp": True})],
        {setting: str(written), "HTTPERROR_ALLOW_ALL": False},
    )
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


PASSWORDS_WITH_MARKS = ["S3cret#frag", "S3cret/slash", "S3cretPW?x"]


@pytest.mark.parametrize("password", PASSWORDS_WITH_MARKS)
def test_a_redis_password_with_unencoded_marks_is_never_shown(password: str) -> None:
    url = f"redis://:{password}@127.0.0.1:{free_port()}/0"
    piece = "S3cret"  # what a parser that stops at the mark quotes
    with pytest.raises(ValueError, match="CDP_POOL_CLUSTER_REDIS_URL") as raised:
        check_redis(url)
    error = raised.value
    chained = None if error.__suppress_context__ else error.__context__
    shown = [str(error), repr(error.__cause__), repr(chained)]
    assert all(piece not in text for text in shown), shown
    assert redact_url(url).startswith("redis://:***@127.0.0.1:")


@pytest.mark.parametrize("password", PASSWORDS_WITH_MARKS)
def test_a_redis_url_setting_with_such_a_password_is_refused_without_it(password: str) -> None:
    with pytest.raises(ValueError, match="CDP_POOL_CLUSTER_REDIS_URL") as raised:
        PoolConfig.from_settings(
            Settings({"CDP_POOL_CLUSTER_REDIS_URL": f"http://:{password}@127.0.0.1:1/0"})
        )
    assert "S3cret" not in str(raised.value)


def test_scrub_secrets_removes_the_pieces_another_library_quotes() -> None:
    url = "redis://:S3cret#frag@127.0.0.1:1/0"
    message = "Port could not be cast to integer value as 'S3cret' (redis://:S3cret#frag@...)"
    scrubbed = scrub_secrets(message, url)
    assert "S3cret" not in scrubbed
    assert "frag" not in scrubbed
    assert redact_url("http://host/p?mail=a@b") == "http://host/p?mail=***"  # no user part
    assert redact_url("ws://admin:pw@h:1/x?apiKey=k") == "ws://admin:***@h:1/x?apiKey=***"


def test_a_bad_endpoint_setting_is_refused_without_its_secrets() -> None:
    with pytest.raises(ValueError, match="CDP_POOL_ENDPOINTS") as raised:
        PoolConfig.from_settings(
            Settings({"CDP_POOL_ENDPOINTS": ["ftp://u:EPs3cret@127.0.0.1:9/?token=EPtok"]})
        )
    assert "is not a CDP endpoint" in str(raised.value)
    for secret in SECRETS:
        assert secret not in str(raised.value)


@pytest.mark.parametrize("setting", ["CDP_POOL_STATUS_FILE", "CDP_POOL_FAILURES_FILE"])
def test_a_status_or_failures_file_is_never_created_readable_or_through_a_link(
    tmp_path: Path, setting: str
) -> None:
    """Found by a fresh-user trial: the start-up check created the file with the
    umask (0644) and the crawl made it 0600 only later, so another user could
    open it in between; a symbolic link was followed."""
    from scrapy_cdp_pool.shared.paths import check_writable_file

    created = tmp_path / "created.jsonl"
    check_writable_file(setting, str(created))
    assert stat.S_IMODE(created.stat().st_mode) == 0o600
    target = tmp_path / "target"
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(ValueError, match=f"{setting}: .*symbolic link"):
        check_writable_file(setting, str(link))
    assert not target.exists()


@pytest_twisted.ensureDeferred
async def test_the_failures_file_never_holds_a_urls_password(
    site: SiteServer, tmp_path: Path
) -> None:
    failures = tmp_path / "failures.jsonl"
    url = site.url("/js?n=1").replace("http://", "http://bob:hunter2@")
    await crawl(
        [scrapy.Request(url, meta={"cdp": True})], {"CDP_POOL_FAILURES_FILE": str(failures)}
    )
    text = failures.read_text()
    assert "bob:***@" in text
    assert "hunter2" not in text
