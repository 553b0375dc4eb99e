"""The main document's response, paused at the response stage (for
:class:`~scrapy_cdp_pool.render._page.interception.FetchInterceptor`): a
redirect followed or handed back to Scrapy, an HTML page let through to be
rendered (or read first and fulfilled: no ``Content-Type``, no charset, a
body cut short to keep), a raw document (JSON, PDF, image, attachment, 204)
taken as its original bytes without being rendered (nor, on Chromium,
downloaded). ``DOWNLOAD_MAXSIZE`` is enforced on an announced
``Content-Length`` here, on a body read here as it streams.
"""

from __future__ import annotations

import base64
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.cdp import CDPError
from scrapy_cdp_pool.errors import ResponseTooLarge
from scrapy_cdp_pool.render._page.body_stream import read_body_keeping_loss, read_body_stream
from scrapy_cdp_pool.render._page.document import DocumentResponse
from scrapy_cdp_pool.render._page.document_kind import (
    NO_BODY_STATUSES,
    bom_charset,
    content_length,
    is_displayed_text,
    is_raw_document,
    is_unlabelled,
    looks_like_html,
    names_no_charset,
)
from scrapy_cdp_pool.render._request.redirects import hands_back_redirects, is_handed_back

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page_handle import PageHandle

# the interceptor's logger: these lines logged under it before the split
logger = logging.getLogger("scrapy_cdp_pool.render.interception")


async def abort(page: PageHandle, request_id: str) -> None:
    """Fail a paused request (``Aborted``); a page gone meanwhile is no error."""
    try:
        await page.command("Fetch.failRequest", {"requestId": request_id, "errorReason": "Aborted"})
    except CDPError as e:
        logger.debug("%s: aborting a paused request: %r", page.spec.url, e)


class DocumentResponses:
    """Answers the main frame's document responses of ``page``."""

    def __init__(self, page: PageHandle) -> None:
        self.page = page

    async def on_response(self, request_id: str, params: dict[str, Any]) -> None:
        """A main-frame document response (not an error) paused at the
        response stage: a redirect followed or handed back, else the document.

        :raises ResponseTooLarge: its body is past the request's maxsize.
        """
        status = int(params["responseStatusCode"])
        headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
        url = params.get("request", {}).get("url", self.page.spec.url)
        location = next((v for k, v in headers if k.lower() == "location"), None)
        if 300 <= status < 400 and location:
            if self._hands_back_redirect() and is_handed_back(status, headers):
                await self._hand_back(request_id, url, status, headers, params)
                return
            self.page.tracker.on_redirect(url, status)
            await self.page.command("Fetch.continueRequest", {"requestId": request_id})
            return
        await self._on_document(request_id, url, status, headers, params)

    def _hands_back_redirect(self) -> bool:
        """Whether a redirect of the main document goes back to Scrapy instead
        of being followed: for the request's own navigation (no document yet)
        without a profile, so Scrapy's ``RedirectMiddleware`` and
        ``CookiesMiddleware`` handle every hop exactly as for a plain request
        (see :mod:`scrapy_cdp_pool.render._request.redirects`). A profile keeps its
        cookies in the browser, which then follows the redirects itself, as it
        does for navigations an action starts."""
        return hands_back_redirects(self.page.spec) and self.page.tracker.document is None

    async def _hand_back(
        self,
        request_id: str,
        url: str,
        status: int,
        headers: list[tuple[str, str]],
        params: dict[str, Any],
    ) -> None:
        """Take a redirect as the document (no body: Chromium cannot read a
        redirect's) and stop the navigation there."""
        document = DocumentResponse(
            url=url,
            status=status,
            headers=headers,
            network_id=params.get("networkId"),
            body=b"",
            received_at=time.monotonic(),
        )
        self.page.tracker.on_document(document)
        await abort(self.page, request_id)

    async def _on_document(
        self,
        request_id: str,
        url: str,
        status: int,
        headers: list[tuple[str, str]],
        params: dict[str, Any],
    ) -> None:
        """The main document's response (not a redirect): rendered by the
        page, or taken as bytes (see :func:`is_raw_document`)."""
        maxsize = self.page.spec.maxsize
        expected = content_length(headers)
        if maxsize and expected is not None and expected > maxsize:
            raise ResponseTooLarge(self.page.spec.url, expected, maxsize, expected=True)
        document = DocumentResponse(
            url=url,
            status=status,
            headers=headers,
            network_id=params.get("networkId"),
            received_at=time.monotonic(),
        )
        method = params.get("request", {}).get("method")
        has_body = status not in NO_BODY_STATUSES and method != "HEAD"
        body: bytes | None = None
        if has_body and is_unlabelled(headers):
            # No Content-Type: what the body is decides, as Scrapy's
            # responsetypes does for a plain request (Lightpanda rendered
            # such a JSON or text body as an empty page)
            body = await self._read_body(request_id, headers, expected, maxsize)
            if looks_like_html(url, body):
                self._show(document)
                await self._fulfill(request_id, status, params, body)
                return
        elif await self._rendered(request_id, document, params, has_body, expected):
            return
        await self._take_raw(request_id, document, params, body, has_body)

    async def _rendered(
        self,
        request_id: str,
        document: DocumentResponse,
        params: dict[str, Any],
        has_body: bool,
        expected: int | None,
    ) -> bool:
        """Whether a labelled main document is HTML the page renders (then
        answered here: let through, or read first and fulfilled); False for
        a raw document, left to :meth:`_take_raw`."""
        status, headers, maxsize = document.status, document.headers, self.page.spec.maxsize
        if (
            has_body
            and not self.page.backend.sniffs_byte_order_mark
            and not is_raw_document(status, headers)
            and names_no_charset(headers)
        ):
            # An HTML page without a charset: its byte order mark decides, as
            # the HTML standard says (the browser would ignore it).
            body = await self._read_body(request_id, headers, expected, maxsize)
            self._show(document)
            await self._fulfill(request_id, status, params, body, charset=bom_charset(body))
            return True
        if self._keeps_cut_short_body(has_body, status, headers, expected):
            body, cut_short = await read_body_keeping_loss(
                self.page, request_id, self.page.spec.url, maxsize, expected
            )
            self._show(document)
            if cut_short:
                self.page.tracker.cut_short(len(body), expected)
            await self._fulfill(request_id, status, params, body)
            return True
        if not is_raw_document(status, headers):
            self._show(document)
            await self.page.command("Fetch.continueRequest", {"requestId": request_id})
            return True
        return False

    def _show(self, document: DocumentResponse) -> None:
        """The document is the page's (rendered): tracked, and its body
        counted as it arrives."""
        self.page.tracker.on_document(document)
        self.page.body_size.watch(document.network_id)

    async def _take_raw(
        self,
        request_id: str,
        document: DocumentResponse,
        params: dict[str, Any],
        body: bytes | None,
        has_body: bool,
    ) -> None:
        """Take a raw document as its bytes (``body``, when read already),
        neither rendered nor downloaded; shown too when the request has
        actions to run on it and it is text (as in Playwright)."""
        status, headers = document.status, document.headers
        if body is None and has_body:
            expected = content_length(headers)
            body = await self._read_body(request_id, headers, expected, self.page.spec.maxsize)
        document.body = body or b""
        if self.page.spec.actions and body and is_displayed_text(status, headers):
            # taken as bytes, and shown for the actions to run on (as in Playwright)
            document.displayed = True
            self.page.tracker.on_document(document)
            await self._fulfill(request_id, status, params, body)
            return
        self.page.tracker.on_document(document)
        await abort(self.page, request_id)  # taken as bytes: neither render nor download it

    def _keeps_cut_short_body(
        self, has_body: bool, status: int, headers: list[tuple[str, str]], expected: int | None
    ) -> bool:
        """Whether an HTML document is read here before the page gets it,
        so that what arrived of a body cut short is kept: under
        ``DOWNLOAD_FAIL_ON_DATALOSS = False`` on a backend that streams
        paused bodies (Chromium). Chromium itself lost it: a short HTML
        body without a charset (waiting for 1024 bytes to look for one)
        became an empty page when the transfer failed (measured on Scrapy's
        ``/broken``: 7 of 20 bytes, an empty body where plain Scrapy kept
        ``partial``). Only with a ``Content-Length``, which tells a body cut
        short from a whole one (Chromium's stream of a chunked body missing
        its last chunk just ends; Chromium keeps such a page itself, flagged
        by its ``ERR_INCOMPLETE_CHUNKED_ENCODING``)."""
        return (
            expected is not None
            and has_body
            and not self.page.spec.fail_on_dataloss
            and self.page.backend.streams_response_bodies
            and not is_raw_document(status, headers)
        )

    async def _read_body(
        self, request_id: str, headers: list[tuple[str, str]], expected: int | None, maxsize: int
    ) -> bytes:
        """The paused main document's body, within ``maxsize``."""
        if maxsize and self._streams(headers, expected):
            body = await read_body_stream(self.page, request_id, self.page.spec.url, maxsize)
        else:
            result = await self.page.command("Fetch.getResponseBody", {"requestId": request_id})
            data = result.get("body", "")
            body = base64.b64decode(data) if result.get("base64Encoded") else data.encode()
        if maxsize and len(body) > maxsize:
            raise ResponseTooLarge(self.page.spec.url, len(body), maxsize, expected=False)
        return body

    async def _fulfill(
        self,
        request_id: str,
        status: int,
        params: dict[str, Any],
        body: bytes,
        charset: str | None = None,
    ) -> None:
        """Let the page load ``body``, read already, with the response's headers
        (its body is decoded: no ``Content-Encoding``/``Content-Length``), its
        ``Content-Type`` labelled ``charset`` when one is given."""
        headers = [
            h
            for h in params.get("responseHeaders", [])
            if h["name"].lower() not in ("content-encoding", "content-length")
        ]
        if charset is not None:
            headers = [
                {"name": h["name"], "value": f"{h['value']}; charset={charset}"}
                if h["name"].lower() == "content-type"
                else h
                for h in headers
            ]
        await self.page.command(
            "Fetch.fulfillRequest",
            {
                "requestId": request_id,
                "responseCode": status,
                "responseHeaders": headers,
                "body": base64.b64encode(body).decode("ascii"),
            },
        )

    def _streams(self, headers: list[tuple[str, str]], length: int | None) -> bool:
        """Whether a raw document's body is read in chunks, to stop at the
        maxsize: on a backend that can, when its size is not bounded by a
        ``Content-Length`` (none, or a compressed body, whose decoded size
        it does not bound); a body within its ``Content-Length`` is read in
        one command, one round trip fewer."""
        if not self.page.backend.streams_response_bodies:
            return False
        encoded = any(k.lower() == "content-encoding" and v.strip() for k, v in headers)
        return length is None or encoded
