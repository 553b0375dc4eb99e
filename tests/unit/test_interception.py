"""FetchInterceptor's decisions for paused requests: block, continue, take a
main document as HTML to render or as raw bytes, refuse one too large. The
page is a stand-in that records the CDP commands it is asked to send (the one
part not real here: these are decisions, not browser behaviour, which the
contract tests check against real browsers)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import pytest_twisted

from scrapy_cdp_pool.browser.backends import CHROMIUM, Backend
from scrapy_cdp_pool.render._page.body_size import BodySizeGuard
from scrapy_cdp_pool.render._page.document import DocumentTracker
from scrapy_cdp_pool.render._page.document_kind import is_raw_document, shareable
from scrapy_cdp_pool.render._page.interception import FetchInterceptor

TARGET = "T1"


@dataclass
class Spec:
    url: str = "http://a.test/"
    block_resources: frozenset[str] = frozenset()
    block_urls: tuple[str, ...] = ()
    overrides_request: bool = False
    maxsize: int = 0
    allow_private_networks: bool = True
    actions: tuple[Any, ...] = ()


@dataclass
class StandInPage:
    spec: Spec
    target_id: str = TARGET
    guard_cache: bool = False
    tracker: DocumentTracker = field(default_factory=lambda: DocumentTracker(main_frame_id=TARGET))
    commands: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    body: bytes = b""
    backend: Backend = CHROMIUM
    body_size: BodySizeGuard = field(default_factory=lambda: BodySizeGuard("", 0))
    read: int = 0  # bytes of ``body`` handed out by IO.read

    async def command(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.commands.append((method, params))
        if method == "Fetch.getResponseBody":
            return {"body": base64.b64encode(self.body).decode(), "base64Encoded": True}
        if method == "Fetch.takeResponseBodyAsStream":
            return {"stream": "s1"}
        if method == "IO.read":
            chunk = self.body[self.read : self.read + params["size"]]
            self.read += len(chunk)
            data = base64.b64encode(chunk).decode()
            return {"data": data, "base64Encoded": True, "eof": self.read >= len(self.body)}
        return {}

    def fail(self, error: BaseException) -> None:
        self.failures.append(error)


def paused(url: str, resource_type: str, frame: str = "child", **response: Any) -> dict[str, Any]:
    return {
        "requestId": "r1",
        "frameId": frame,
        "resourceType": resource_type,
        "request": {"url": url, "method": "GET"},
        "networkId": "n1",
        **response,
    }


def answered(page: StandInPage) -> list[tuple[str, str | None]]:
    return [(method, params.get("errorReason")) for method, params in page.commands]


@pytest_twisted.ensureDeferred
async def test_blocked_types_and_urls_fail_subresources_but_never_the_page() -> None:
    page = StandInPage(Spec(block_resources=frozenset({"image"}), block_urls=("*/ads/*",)))
    interceptor = FetchInterceptor(page)
    await interceptor.on_paused(paused("http://a.test/x.png", "Image"))
    await interceptor.on_paused(paused("http://a.test/ads/a.js", "Script"))
    await interceptor.on_paused(paused("http://a.test/app.js", "Script"))
    await interceptor.on_paused(paused("http://a.test/ads/page", "Document", frame=TARGET))
    assert answered(page) == [
        ("Fetch.failRequest", "BlockedByClient"),
        ("Fetch.failRequest", "BlockedByClient"),
        ("Fetch.continueRequest", None),
        ("Fetch.continueRequest", None),
    ]
    assert page.tracker.blocked == {"image": 1, "url": 1}


@pytest_twisted.ensureDeferred
async def test_an_html_document_is_rendered_and_a_json_one_taken_as_bytes() -> None:
    html = StandInPage(Spec())
    await FetchInterceptor(html).on_paused(
        paused(
            "http://a.test/",
            "Document",
            frame=TARGET,
            responseStatusCode=200,
            responseHeaders=[{"name": "Content-Type", "value": "text/html"}],
        )
    )
    assert answered(html) == [("Fetch.continueRequest", None)]
    assert html.tracker.document is not None
    assert html.tracker.document.body is None  # rendered: read from the DOM later
    raw = StandInPage(Spec(), body=b'{"a": 1}')
    await FetchInterceptor(raw).on_paused(
        paused(
            "http://a.test/a.json",
            "Document",
            frame=TARGET,
            responseStatusCode=200,
            responseHeaders=[{"name": "Content-Type", "value": "application/json"}],
        )
    )
    assert answered(raw) == [("Fetch.getResponseBody", None), ("Fetch.failRequest", "Aborted")]
    assert raw.tracker.document is not None
    assert raw.tracker.document.body == b'{"a": 1}'
    assert raw.tracker.settled("load")


@pytest_twisted.ensureDeferred
async def test_a_document_announced_over_maxsize_fails_the_page_and_is_aborted() -> None:
    page = StandInPage(Spec(maxsize=100))
    await FetchInterceptor(page).on_paused(
        paused(
            "http://a.test/",
            "Document",
            frame=TARGET,
            responseStatusCode=200,
            responseHeaders=[{"name": "Content-Length", "value": "5000"}],
        )
    )
    assert [type(e).__name__ for e in page.failures] == ["ResponseTooLarge"]
    assert "larger than download max size" in str(page.failures[0])
    assert answered(page) == [("Fetch.failRequest", "Aborted")]
    assert page.tracker.document is None


def test_raw_documents_and_shareable_responses() -> None:
    assert not is_raw_document(200, [("Content-Type", "text/html; charset=utf-8")])
    assert not is_raw_document(200, [])  # no type: rendered, as a browser does
    assert is_raw_document(200, [("content-type", "application/pdf")])
    assert is_raw_document(204, [("Content-Type", "text/html")])
    attachment = [("Content-Type", "text/html"), ("Content-Disposition", "attachment; f=a")]
    assert is_raw_document(200, attachment)
    assert shareable([{"name": "Cache-Control", "value": "max-age=60"}])
    assert not shareable([{"name": "Set-Cookie", "value": "a=1"}])
    assert not shareable([{"name": "Vary", "value": "Accept, Cookie"}])
    assert not shareable([{"name": "cache-control", "value": "private, max-age=60"}])


@pytest_twisted.ensureDeferred
async def test_a_raw_document_without_length_is_read_in_chunks_and_cut_past_maxsize() -> None:
    page = StandInPage(Spec(maxsize=3 << 20), body=b"x" * (10 << 20))
    interceptor = FetchInterceptor(page)
    headers = [{"name": "Content-Type", "value": "text/plain"}]
    await interceptor.on_paused(
        paused(
            "http://a.test/", "Document", TARGET, responseStatusCode=200, responseHeaders=headers
        )
    )
    assert page.read == 4 << 20  # four reads of 1 MiB, not the 10 MiB
    assert "Received 4194304 bytes which is larger than download max size (3145728)" in str(
        page.failures[0]
    )
    assert page.commands[-1][0] == "Fetch.failRequest"  # (IO.close is sent, not awaited)


@pytest_twisted.ensureDeferred
async def test_a_raw_document_under_maxsize_is_read_whole_by_chunks() -> None:
    page = StandInPage(Spec(maxsize=3 << 20), body=b"y" * ((2 << 20) + 5))
    interceptor = FetchInterceptor(page)
    headers = [{"name": "Content-Type", "value": "text/plain"}]
    await interceptor.on_paused(
        paused(
            "http://a.test/", "Document", TARGET, responseStatusCode=200, responseHeaders=headers
        )
    )
    assert not page.failures
    assert page.tracker.document is not None
    assert page.tracker.document.body == page.body


def test_the_body_guard_counts_only_the_watched_document() -> None:
    guard = BodySizeGuard("http://a.test/", 100)
    assert guard.on_data({"requestId": "n1", "dataLength": 500}) is None  # nothing watched
    guard.watch("n1")
    assert guard.on_data({"requestId": "other", "dataLength": 500}) is None
    assert guard.on_data({"requestId": "n1", "dataLength": 60, "encodedDataLength": 0}) is None
    error = guard.on_data({"requestId": "n1", "dataLength": 0, "encodedDataLength": 101})
    assert str(error) == (
        "Received 101 bytes which is larger than download max size (100) for http://a.test/"
    )
    assert guard.on_data({"requestId": "n1", "dataLength": 500}) is None  # told once


@pytest_twisted.ensureDeferred
async def test_only_a_fetch_no_content_length_bounds_is_counted_and_cut_once() -> None:
    # issue 39 item 7: a chunked (or compressed) fetch() body is counted as it
    # arrives; one with a Content-Length within the limit is not watched at all
    page = StandInPage(Spec(maxsize=100), body_size=BodySizeGuard("http://a.test/", 100))
    interceptor = FetchInterceptor(page)
    bounded = [{"name": "Content-Length", "value": "50"}]
    compressed = [
        {"name": "Content-Length", "value": "50"},
        {"name": "Content-Encoding", "value": "gzip"},
    ]
    for network_id, headers in (("n1", []), ("n2", bounded), ("n3", compressed)):
        params = paused(
            "http://a.test/api", "Fetch", responseStatusCode=200, responseHeaders=headers
        )
        await interceptor.on_paused({**params, "networkId": network_id})
    assert answered(page) == [("Fetch.continueRequest", None)] * 3
    guard = page.body_size
    assert sorted(guard.unbounded) == ["n1", "n3"]
    assert not guard.unbounded_past_limit({"requestId": "n2", "dataLength": 500})
    assert not guard.unbounded_past_limit({"requestId": "n1", "dataLength": 60})
    assert guard.unbounded_past_limit({"requestId": "n1", "dataLength": 41})
    assert not guard.unbounded_past_limit({"requestId": "n1", "dataLength": 500})  # told once
    assert guard.unbounded_past_limit(
        {"requestId": "n3", "dataLength": 0, "encodedDataLength": 101}
    )
