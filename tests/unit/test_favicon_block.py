"""Which embedded Chromium gets the browser session's favicon pattern, and
which paused requests it fails (the crawls: tests/test_behaviour_chromium.py)."""

from __future__ import annotations

import pytest

from scrapy_cdp_pool.browser.pool.favicon_block import is_favicon, needs_browser_block

FULL = {"product": "Chrome/156.0.8078.129"}  # /usr/bin/chromium's Browser.getVersion
SHELL = {"product": "HeadlessChrome/156.0.8078.129"}  # chromium-headless-shell's


@pytest.mark.parametrize(
    ("reuse_pages", "version", "expected"),
    [
        (False, FULL, True),  # fresh contexts on a Chromium that asks: the only case
        (None, FULL, False),  # Chromium's default: kept pages
        (True, FULL, False),
        (False, SHELL, False),  # the shell asks for no favicon
        (False, {}, True),  # an unknown product: assumed to ask
    ],
)
def test_only_fresh_contexts_on_a_chromium_that_asks_get_it(
    reuse_pages: bool | None, version: dict[str, str], expected: bool
) -> None:
    assert needs_browser_block(reuse_pages, version) is expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://a.test/favicon.ico", True),
        ("http://a.test/favicon.ico?v=2#x", True),
        ("http://a.test/static/favicon.ico", True),
        ("http://a.test/favicon.icon", False),
        ("http://a.test/favicon.ico.png", False),
        ("http://a.test/?favicon.ico", False),
    ],
)
def test_a_favicon_is_told_by_its_path(url: str, expected: bool) -> None:
    assert is_favicon({"request": {"url": url}}) is expected
