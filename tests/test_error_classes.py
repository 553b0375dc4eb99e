"""A rendered request fails with the exception class plain Scrapy raises for
the same fault, on both backends, its message keeping the browser's own
words: the same URL is crawled with and without ``meta["cdp"]`` in one crawl
and the classes compared (a refused connection, a host that does not
resolve, a download timeout, a body cut short of its ``Content-Length``, a
connection closed with no answer). A browser slower to start than a
request's ``download_timeout`` does not fail that request."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from lightpanda.client import find_binary

from tests.at_once import each_at_once
from tests.crawl import crawl
from tests.servers import SiteServer


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _faults(site: SiteServer) -> dict[str, tuple[str, dict[str, Any]]]:
    """Fault name -> (URL, extra meta)."""
    return {
        "refused": (f"http://127.0.0.1:{_closed_port()}/refused", {}),
        "dns": ("http://no-such-host.invalid/dns", {}),
        "timeout": (site.url("/never?fault=timeout"), {"download_timeout": 3}),
        "dataloss": (site.url("/truncated?length=5000&sent=200"), {}),
        "dropped": (site.url("/dropped"), {}),
        "reset": (site.url("/reset"), {}),
    }


BROWSER_WORDS = {
    "lightpanda": {
        "refused": "CouldntConnect",
        "dns": "CouldntResolveHost",
        "dataloss": "PartialFile",
    },
    "chromium": {
        "refused": "net::ERR_CONNECTION_REFUSED",
        "dns": "net::ERR_NAME_NOT_RESOLVED",
        "dataloss": "net::ERR_CONTENT_LENGTH_MISMATCH",
        "reset": "net::ERR_CONNECTION_RESET",
    },
}


def _classes(spider: Any) -> dict[tuple[str, bool], BaseException]:
    found: dict[tuple[str, bool], BaseException] = {}
    for failure in spider.failures:
        request = failure.request
        found[(request.meta["fault"], bool(request.meta.get("cdp")))] = failure.value
    return found


@pytest.mark.parametrize("backend", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_rendered_fault_fails_as_plain_scrapy_fails(site: SiteServer, backend: str) -> None:
    faults = _faults(site)
    requests = [
        scrapy.Request(url, meta={"fault": name, "cdp": cdp, **meta}, dont_filter=True)
        for name, (url, meta) in faults.items()
        for cdp in (False, True)
    ]
    settings = {"CDP_POOL_BROWSER": backend, "DOWNLOAD_TIMEOUT": 60}
    spider, _ = await crawl(requests, settings)
    outcomes: dict[tuple[str, bool], Any] = {
        (r.meta["fault"], bool(r.meta.get("cdp"))): f"a {r.status} response"
        for r in spider.responses
    }
    outcomes.update(_classes(spider))
    mismatches = {}
    for name in faults:
        plain, rendered = outcomes.get((name, False)), outcomes.get((name, True))
        print(f"{backend} {name}: plain {plain!r} | rendered {rendered!r}")
        if not isinstance(plain, BaseException) or not isinstance(rendered, type(plain)):
            mismatches[name] = (plain, rendered)
    assert not mismatches, mismatches
    for name, words in BROWSER_WORDS[backend].items():  # the browser's own text is kept
        assert words in str(outcomes[(name, True)]), (name, outcomes[(name, True)])


def _slow_starting(tmp_path: Path, binary: str, seconds: int) -> str:
    """A launcher that starts ``binary`` ``seconds`` late (a slow browser start)."""
    launcher = tmp_path / "slow-browser"
    launcher.write_text(f'#!/bin/sh\nsleep {seconds}\nexec "{binary}" "$@"\n')
    launcher.chmod(0o755)
    return str(launcher)


@pytest_twisted.ensureDeferred
async def test_a_slow_browser_start_does_not_fail_the_first_request(
    site: SiteServer, tmp_path: Path
) -> None:
    """Both backends at once (:func:`tests.at_once.each_at_once`: each case
    waits out its browser's late start)."""

    async def case(backend: str) -> None:
        # The browser starts 8 s late; the first request's download_timeout is 5 s.
        setting = "CDP_POOL_CHROMIUM_PATH" if backend == "chromium" else "CDP_POOL_LIGHTPANDA_PATH"
        real = "/usr/bin/chromium" if backend == "chromium" else str(find_binary())
        (tmp_path / backend).mkdir()
        launcher = _slow_starting(tmp_path / backend, real, 8)
        settings = {"CDP_POOL_BROWSER": backend, setting: launcher}
        request = scrapy.Request(
            site.url(f"/products?{backend}"), meta={"cdp": True, "download_timeout": 5}
        )
        spider, _ = await crawl([request], settings)
        assert not spider.failures, [repr(f.value) for f in spider.failures]
        assert [r.status for r in spider.responses] == [200]

    await each_at_once({b: lambda b=b: case(b) for b in ("lightpanda", "chromium")})


@pytest.mark.parametrize("via", ["meta", "setting"])
@pytest.mark.parametrize("backend", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_body_cut_short_is_kept_under_download_fail_on_dataloss_false(
    site: SiteServer, backend: str, via: str
) -> None:
    # Plain Scrapy hands back what arrived, flagged "dataloss"; so does a
    # rendered request where the browser keeps the document (Chromium), and
    # Lightpanda, which drops it, fails by name (ResponseDataLossError).
    url = site.url("/truncated?length=5000&sent=300")
    meta = {"download_fail_on_dataloss": False} if via == "meta" else {}
    settings = {"CDP_POOL_BROWSER": backend}
    if via == "setting":
        settings["DOWNLOAD_FAIL_ON_DATALOSS"] = False
    requests = [
        scrapy.Request(url, meta={"cdp": cdp, **meta}, dont_filter=True) for cdp in (False, True)
    ]
    spider, _ = await crawl(requests, settings)
    responses = {bool(r.meta.get("cdp")): r for r in spider.responses}
    plain = responses[False]
    assert (plain.status, plain.flags) == (200, ["dataloss"])
    if backend == "lightpanda":
        assert [type(f.value).__name__ for f in spider.failures] == ["ResponseDataLossError"]
        return
    assert not spider.failures, [repr(f.value) for f in spider.failures]
    rendered = responses[True]
    assert (rendered.status, rendered.flags) == (200, ["dataloss"])
    # the same text arrived: the page's paragraph, cut where the server stopped
    assert rendered.css("p::text").get() == plain.css("p::text").get()


@pytest_twisted.ensureDeferred
async def test_a_short_body_cut_short_without_a_charset_keeps_what_arrived_on_chromium(
    site: SiteServer,
) -> None:
    """Issue 35, item 5(f): 7 of 20 bytes of bare text labelled text/html
    only (Scrapy's mock ``/broken``) came back from Chromium as an empty
    body flagged ``dataloss``; plain Scrapy keeps the 7 bytes. Compared field
    by field: the page's text is what arrived."""
    url = site.url("/truncated?length=20&sent=7&charset=none&bare=1")
    requests = [
        scrapy.Request(url, meta={"cdp": cdp, "download_fail_on_dataloss": False}, dont_filter=True)
        for cdp in (False, True)
    ]
    spider, _ = await crawl(requests, {"CDP_POOL_BROWSER": "chromium"})
    assert not spider.failures, [repr(f.value) for f in spider.failures]
    responses = {bool(r.meta.get("cdp")): r for r in spider.responses}
    plain, rendered = responses[False], responses[True]
    assert (plain.status, plain.flags, plain.body) == (200, ["dataloss"], b"x" * 7)
    assert (rendered.url, rendered.status, rendered.flags) == (plain.url, 200, ["dataloss"])
    assert rendered.css("body::text").get() == plain.text
