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

from scrapy_cdp_pool.render.document import DocumentTracker
from scrapy_cdp_pool.render.interception import FetchInterceptor, is_raw_document, shareable

TARGET = "T1"


@dataclass
class Spec:
    url: str = "http://a.test/"
    block_resources: frozenset[str] = frozenset()
    block_urls: tuple[str, ...] = ()
    overrides_request: bool = False
    maxsize: int = 0


@dataclass
class StandInPage:
    spec: Spec
    target_id: str = TARGET
    guard_cache: bool = False
    tracker: DocumentTracker = field(default_factory=lambda: DocumentTracker(main_frame_id=TARGET))
    commands: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    body: bytes = b""

    async def command(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.commands.append((method, params))
        if method == "Fetch.getResponseBody":
            return {"body": base64.b64encode(self.body).decode(), "base64Encoded": True}
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
