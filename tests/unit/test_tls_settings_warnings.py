"""Scrapy's TLS settings a browser cannot apply are said by name at start
(issue 35 item 5): DOWNLOAD_VERIFY_CERTIFICATES when it says otherwise than
the browser does (CDP_POOL_IGNORE_HTTPS_ERRORS), and an SSLKEYLOGFILE that
cannot be written, with Scrapy's own words. Before, both went unsaid."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool.core.handler import _check_unapplied_settings


def _open_error(path: Path) -> str:
    try:
        path.open("ab")
    except OSError as e:
        return str(e)
    raise AssertionError(path)


def _warnings(caplog: pytest.LogCaptureFixture, settings: dict[str, object]) -> list[str]:
    caplog.clear()
    with caplog.at_level("WARNING"):
        _check_unapplied_settings(get_crawler(settings_dict=settings))
    return [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize(
    ("settings", "warned"),
    [
        ({}, False),
        ({"DOWNLOAD_VERIFY_CERTIFICATES": True}, False),  # the browser verifies too
        ({"DOWNLOAD_VERIFY_CERTIFICATES": False}, True),
        ({"DOWNLOAD_VERIFY_CERTIFICATES": True, "CDP_POOL_IGNORE_HTTPS_ERRORS": True}, True),
        ({"DOWNLOAD_VERIFY_CERTIFICATES": False, "CDP_POOL_IGNORE_HTTPS_ERRORS": True}, False),
        ({"CDP_POOL_IGNORE_HTTPS_ERRORS": True}, False),  # Scrapy's default: not verified
    ],
)
def test_download_verify_certificates_is_named_when_it_disagrees(
    caplog: pytest.LogCaptureFixture, settings: dict[str, object], warned: bool
) -> None:
    messages = _warnings(caplog, settings)
    named = [m for m in messages if "DOWNLOAD_VERIFY_CERTIFICATES" in m]
    assert len(named) == int(warned), messages
    if warned:
        assert "CDP_POOL_IGNORE_HTTPS_ERRORS" in named[0]


def test_an_unwritable_keylog_file_is_said_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSLKEYLOGFILE", str(tmp_path / "missing" / "keylog"))
    missing = tmp_path / "missing" / "keylog"
    messages = _warnings(caplog, {})
    said = [m for m in messages if "Cannot write TLS session keys" in m]
    assert said == [f"Cannot write TLS session keys to {missing}: {_open_error(missing)}"]
    monkeypatch.setenv("SSLKEYLOGFILE", str(tmp_path / "keylog"))
    assert not [m for m in _warnings(caplog, {}) if "TLS session keys" in m]
