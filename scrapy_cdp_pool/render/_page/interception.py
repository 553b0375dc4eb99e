"""Answers to the browser's ``Fetch`` pauses for one page.

The navigation request is rewritten when the Scrapy request needs a method,
body or headers ``Page.navigate`` cannot send; blocked resource types are
aborted, and so are requests whose URL matches ``CDP_POOL_BLOCK_URLS``
(counted as ``"url"``); every main-frame document response is read at the response stage, so
status and headers are the server's own, and a non-HTML document (JSON, PDF,
image, attachment, 204) is taken as its original bytes without being rendered
(or, on Chromium, downloaded). Proxy authentication challenges get the
profile's credentials.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_cdp_pool.browser.cdp import CDPError, CDPRequestTooLarge
from scrapy_cdp_pool.errors import (
    CDPPoolError,
    NavigationForbidden,
    PrivateNavigationRefused,
    ResponseTooLarge,
)
from scrapy_cdp_pool.render._page.body_stream import (
    read_body_keeping_loss,
    read_body_prefix,
    read_body_stream,
)
from scrapy_cdp_pool.render._page.document import DocumentResponse
from scrapy_cdp_pool.render._page.document_kind import (
    NO_BODY_STATUSES,
    bom_charset,
    content_length,
    is_displayed_text,
    is_raw_document,
    is_unlabelled,
    joined,
    looks_like_html,
    names_no_charset,
    same_origin,
    shareable,
)
from scrapy_cdp_pool.render._page.downloads import PageDownload, download_name, is_download
from scrapy_cdp_pool.render._page.private_network import PrivateNetworkRule
from scrapy_cdp_pool.render._request.redirects import hands_back_redirects, is_handed_back
from scrapy_cdp_pool.settings.url_patterns import matches_any

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page import Page

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.interception")

PRIVATE_NETWORK = "private_network"
"""The key of ``DocumentTracker.blocked`` for the page's requests refused by
the private-network rule (``cdp_pool/private_network_blocked``; the hosts in
``DocumentTracker.private_hosts``)."""

FAVICON = "favicon"
"""The key of ``DocumentTracker.blocked`` for the browser's own favicon
requests failed (``cdp_pool/favicon_requests_blocked``)."""


TOO_LARGE = "too_large"
"""The key of ``DocumentTracker.blocked`` for the page's own responses
(``fetch()``, XHR, any other with ``guard_cache``) failed because their
``Content-Length`` is past ``DOWNLOAD_MAXSIZE`` (``meta["download_maxsize"]``)."""


def _is_favicon(params: dict[str, Any]) -> bool:
    """Whether a request paused at the request stage is the browser's own
    ``/favicon.ico`` (see ``page_setup.FAVICON_URL_PATTERN``)."""
    url = str(params.get("request", {}).get("url", ""))
    return url.split("?", 1)[0].split("#", 1)[0].endswith("/favicon.ico")


class FetchInterceptor:
    """Handles ``Fetch.requestPaused`` and ``Fetch.authRequired`` of ``page``."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.override_pending = page.spec.overrides_request
        self._credentials_given: set[str] = set()  # URLs answered with credentials
        #: see RenderHooks.allows_navigation
        self.allows_navigation: Callable[[str], bool] | None = None
        #: see RenderHooks.before_leaving
        self.before_leaving: Callable[[], None] | None = None
        spec = page.spec
        self.private_rule = None if spec.allow_private_networks else PrivateNetworkRule(spec.url)

    async def on_paused(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        resource_type = str(params.get("resourceType", "Other")).lower()
        try:
            if "responseStatusCode" in params or "responseErrorReason" in params:
                await self._on_response(params)
            elif resource_type in self.page.spec.block_resources:
                await self._block(request_id, resource_type)
            elif resource_type == "other" and _is_favicon(params):
                await self._block(request_id, FAVICON)
            elif self._blocks_url(params):
                await self._block(request_id, "url")
            elif await self._refuses_private(params, resource_type):
                url = str(params.get("request", {}).get("url", ""))
                self.page.tracker.private_hosts.add(urlsplit(url).netloc)
                if resource_type == "document" and params.get("frameId") == self.page.target_id:
                    # The page leaves for it: what is left is the browser's
                    # error page, no page to hand back.
                    self.page.fail(
                        PrivateNavigationRefused(
                            f"{self.page.spec.url}: the page's own navigation to {url} goes to "
                            "a private network (CDP_POOL_ALLOW_PRIVATE_NETWORKS = False)"
                        )
                    )
                await self._block(request_id, PRIVATE_NETWORK)
            elif self._refuses_navigation(params, resource_type):
                url = str(params.get("request", {}).get("url", ""))
                await self._refuse_navigation(request_id, url)
            elif (
                resource_type == "document"
                and params.get("frameId") == self.page.target_id
                and not await self._may_leave(request_id)
            ):
                pass  # failed: the render ends with why
            elif (
                self.override_pending
                and resource_type == "document"
                and params.get("frameId") == self.page.target_id
            ):
                self.override_pending = False
                await self.page.command("Fetch.continueRequest", self._overrides(params))
            else:
                await self.page.command("Fetch.continueRequest", {"requestId": request_id})
        except CDPRequestTooLarge as e:  # the rewritten request (its body) was refused
            self.page.fail(e)
        except CDPError as e:
            # The page moved on (navigated, closed) before the answer: nothing to do.
            logger.debug("%s: answering a paused request: %r", self.page.spec.url, e)
        except ResponseTooLarge as e:
            self.page.fail(e)
            await self._abort(request_id)

    def _past_maxsize(self, params: dict[str, Any]) -> bool:
        """Whether a response of the page's own (not its main document),
        paused at the response stage, announces a body past the request's
        maxsize (Chromium would read it whole into the page)."""
        maxsize = self.page.spec.maxsize
        if not maxsize or "responseErrorReason" in params:
            return False
        headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
        length = content_length(headers)
        return length is not None and length > maxsize

    async def _may_leave(self, request_id: str) -> bool:
        """Whether the main frame's document request paused at the request
        stage may leave for the site (``RenderHooks.before_leaving``, asked
        with no await before its continue is queued); if not, the request is
        failed in the browser and the render ends with the hook's exception."""
        check = self.before_leaving
        if check is None:
            return True
        try:
            check()
        except CDPPoolError as e:  # LeaseLost
            self.page.fail(e)
            await self.page.command(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "Aborted"}
            )
            return False
        return True

    async def _block(self, request_id: str, reason: str) -> None:
        """Fail a request paused at the request stage, counted under
        ``reason`` in ``DocumentTracker.blocked`` (a resource type, ``"url"``
        or :data:`FAVICON`)."""
        blocked = self.page.tracker.blocked
        blocked[reason] = blocked.get(reason, 0) + 1
        await self.page.command(
            "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
        )

    async def _refuse_navigation(self, request_id: str, url: str) -> None:
        """End the render: the page's own navigation to ``url`` is forbidden
        by robots.txt (the request is dropped, as plain Scrapy drops one
        robots.txt forbids; the browser's error page would be no page)."""
        blocked = self.page.tracker.blocked
        blocked["robots"] = blocked.get("robots", 0) + 1
        self.page.fail(
            NavigationForbidden(
                f"{self.page.spec.url}: Forbidden by robots.txt: the page's own navigation to "
                f"{url} (ROBOTSTXT_OBEY)"
            )
        )
        await self.page.command(
            "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
        )

    def _refuses_navigation(self, params: dict[str, Any], resource_type: str) -> bool:
        """Whether a navigation of the main frame that the page started
        itself (after its first document) is refused (robots.txt)."""
        allows = self.allows_navigation
        return (
            allows is not None
            and resource_type == "document"
            and params.get("frameId") == self.page.target_id
            and self.page.tracker.document is not None
            and not allows(str(params.get("request", {}).get("url", "")))
        )

    async def _refuses_private(self, params: dict[str, Any], resource_type: str) -> bool:
        """Whether a request paused at the request stage is one the page
        started itself to a non-public address it may not reach
        (:mod:`~scrapy_cdp_pool.render._page.private_network`); never the request's
        own navigation (the main frame's document before the first arrived,
        redirects of it included)."""
        rule = self.private_rule
        if rule is None:
            return False
        if (
            resource_type == "document"
            and params.get("frameId") == self.page.target_id
            and self.page.tracker.document is None
        ):
            return False
        return await rule.refuses(str(params.get("request", {}).get("url", "")))

    def _blocks_url(self, params: dict[str, Any]) -> bool:
        """Whether a request paused at the request stage matches
        ``CDP_POOL_BLOCK_URLS``; never the main frame's document (the page itself)."""
        patterns = self.page.spec.block_urls
        if not patterns:
            return False
        if (
            params.get("frameId") == self.page.target_id
            and str(params.get("resourceType", "")).lower() == "document"
        ):
            return False
        return matches_any(patterns, str(params.get("request", {}).get("url", "")))

    async def on_auth(self, params: dict[str, Any]) -> None:
        """Answer an authentication challenge, once per URL (a second one
        means the credentials are wrong: it is cancelled and the 401/407
        becomes the response, instead of the browser retrying dozens of
        times): a proxy's with the context's proxy credentials; a server's
        with the request's own basic credentials when the challenged URL has
        the request's origin (scheme, host and port: the page's same-origin
        calls, never another origin's); any other is cancelled."""
        spec = self.page.spec
        context = spec.context
        challenge = params.get("authChallenge", {})
        url = str(params.get("request", {}).get("url", ""))
        credentials: tuple[str, str] | None = None
        if challenge.get("source") == "Proxy":
            if context is not None and context.proxy_username:
                credentials = (context.proxy_username, context.proxy_password or "")
        elif same_origin(url, spec.url):
            credentials = spec.basic_credentials
        response: dict[str, Any] = {"response": "CancelAuth"}
        if credentials is not None and url not in self._credentials_given:
            self._credentials_given.add(url)
            response = {
                "response": "ProvideCredentials",
                "username": credentials[0],
                "password": credentials[1],
            }
        try:
            await self.page.command(
                "Fetch.continueWithAuth",
                {"requestId": params["requestId"], "authChallengeResponse": response},
            )
        except CDPError as e:
            logger.debug("%s: answering an auth challenge: %r", self.page.spec.url, e)

    def _overrides(self, params: dict[str, Any]) -> dict[str, Any]:
        spec = self.page.spec
        # The browser adds cookies from the context's jar itself (Lightpanda
        # mangles a Cookie header handed back to it: its last value is lost).
        headers = {
            name: value
            for name, value in params.get("request", {}).get("headers", {}).items()
            if name.lower() != "cookie"
        }
        lowered = {name.lower(): name for name in headers}
        for name, _ in spec.headers:
            headers.pop(lowered.get(name.lower(), name), None)
        merged = [{"name": k, "value": v} for k, v in headers.items()]
        merged.extend({"name": name, "value": value} for name, value in joined(spec.headers))
        answer: dict[str, Any] = {
            "requestId": params["requestId"],
            "method": spec.method,
            "headers": merged,
        }
        if spec.body:
            answer["postData"] = base64.b64encode(spec.body).decode("ascii")
        return answer

    def _is_page_download(self, params: dict[str, Any]) -> bool:
        """Whether a document response paused at the response stage is a
        download the page started (render/_page/downloads.py): any frame's, but
        never the request's own document (the main frame's first)."""
        if str(params.get("resourceType", "")).lower() != "document":
            return False
        if "responseErrorReason" in params or "responseStatusCode" not in params:
            return False
        main_frame = params.get("frameId") == self.page.target_id
        if main_frame and self.page.tracker.document is None:
            return False
        if main_frame and not params.get("networkId"):
            # Chromium's ``<a download>``: a main-frame document fetched by its
            # download manager, not by a navigation (no loader, so no
            # networkId): a download whatever its type (before, a text/csv
            # without Content-Disposition replaced the page).
            return True
        headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
        return is_download(int(params["responseStatusCode"]), headers)

    async def _take_download(self, params: dict[str, Any]) -> None:
        """Record a download the page started, with at most
        ``spec.download_max_bytes`` of its body when the request asked for
        downloads, and stop it: the page stays."""
        request_id = params["requestId"]
        headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
        url = str(params.get("request", {}).get("url", ""))
        length = content_length(headers)
        content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
        record = PageDownload(
            url=url,
            name=download_name(url, headers),
            type=content_type.split(";")[0].strip().lower(),
            size=length,
            body=None,
            truncated=False,
        )
        spec = self.page.spec
        try:
            if spec.downloads:
                bound = spec.download_max_bytes
                if length is not None and length > bound:
                    record.truncated = True
                elif self.page.backend.streams_response_bodies:
                    record.body, complete = await read_body_prefix(self.page, request_id, bound)
                    record.truncated = not complete
                    if complete:
                        record.size = len(record.body)
                elif length is not None:
                    result = await self.page.command(
                        "Fetch.getResponseBody", {"requestId": request_id}
                    )
                    data = result.get("body", "")
                    body = base64.b64decode(data) if result.get("base64Encoded") else data.encode()
                    record.body = body[:bound]
                    record.truncated = len(body) > bound
                else:  # no size announced, and no reading in parts: not read
                    record.truncated = True
        finally:
            if not self.page.backend.pauses_before_body:
                self.page.tracker.downloads_fetched_whole += 1
            self.page.tracker.on_download(record)
            await self._abort(request_id)

    async def _on_response(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        if self._is_page_download(params):
            await self._take_download(params)
            return
        is_main = (
            params.get("frameId") == self.page.target_id
            and str(params.get("resourceType", "")).lower() == "document"
            and "responseErrorReason" not in params
        )
        if not is_main:
            await self._on_subresource_response(request_id, params)
            return
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

    async def _on_subresource_response(self, request_id: str, params: dict[str, Any]) -> None:
        """A response of the page's own requests (not its main document):
        failed past ``DOWNLOAD_MAXSIZE`` (announced), kept out of a shared
        cache when it must not be shared, else let through."""
        if self._past_maxsize(params):
            await self._block(request_id, TOO_LARGE)
        elif self.page.guard_cache and not shareable(params.get("responseHeaders", [])):
            await self._fulfill_unstored(params)
        else:
            await self.page.command("Fetch.continueRequest", {"requestId": request_id})

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
                self.page.tracker.on_document(document)
                self.page.body_size.watch(document.network_id)
                await self._fulfill(request_id, status, params, body)
                return
        elif (
            has_body
            and not self.page.backend.sniffs_byte_order_mark
            and not is_raw_document(status, headers)
            and names_no_charset(headers)
        ):
            # An HTML page without a charset: its byte order mark decides, as
            # the HTML standard says (the browser would ignore it).
            body = await self._read_body(request_id, headers, expected, maxsize)
            self.page.tracker.on_document(document)
            self.page.body_size.watch(document.network_id)
            await self._fulfill(request_id, status, params, body, charset=bom_charset(body))
            return
        elif self._keeps_cut_short_body(has_body, status, headers, expected):
            body, cut_short = await read_body_keeping_loss(
                self.page, request_id, self.page.spec.url, maxsize, expected
            )
            self.page.tracker.on_document(document)
            self.page.body_size.watch(document.network_id)
            if cut_short:
                self.page.tracker.cut_short(len(body), expected)
            await self._fulfill(request_id, status, params, body)
            return
        elif not is_raw_document(status, headers):
            self.page.tracker.on_document(document)
            self.page.body_size.watch(document.network_id)
            await self.page.command("Fetch.continueRequest", {"requestId": request_id})
            return
        if body is None and has_body:
            body = await self._read_body(request_id, headers, expected, maxsize)
        document.body = body or b""
        if self.page.spec.actions and body and is_displayed_text(status, headers):
            # taken as bytes, and shown for the actions to run on (as in Playwright)
            document.displayed = True
            self.page.tracker.on_document(document)
            await self._fulfill(request_id, status, params, body)
            return
        self.page.tracker.on_document(document)
        await self._abort(request_id)  # taken as bytes: neither render nor download it

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

    async def _fulfill_unstored(self, params: dict[str, Any]) -> None:
        """Answer a subresource that must not be shared (:func:`shareable`)
        with its own bytes and ``Cache-Control: no-store``, which keeps it
        out of a cache that other profiles or cookie jars use: Lightpanda's
        (it ignores ``Vary: Cookie``: the response stored for one cookie was
        served to every other) and the context of a page Chromium keeps for
        the next request (``CDP_POOL_REUSE_PAGES``: the anonymous profile's
        kept page serves every Scrapy cookie jar, and its cache served one
        jar's ``Vary: Cookie``, ``Set-Cookie`` and ``private`` responses to
        the others). Measured on both, a fulfilled response is not stored.
        Its body is already decoded, so ``Content-Encoding`` and
        ``Content-Length`` are dropped."""
        request_id = params["requestId"]
        result = await self.page.command("Fetch.getResponseBody", {"requestId": request_id})
        body = result.get("body", "")
        if not result.get("base64Encoded"):
            body = base64.b64encode(body.encode()).decode("ascii")
        headers = [
            h
            for h in params.get("responseHeaders", [])
            if h["name"].lower() not in ("cache-control", "content-encoding", "content-length")
        ]
        headers.append({"name": "Cache-Control", "value": "no-store"})
        await self.page.command(
            "Fetch.fulfillRequest",
            {
                "requestId": request_id,
                "responseCode": int(params["responseStatusCode"]),
                "responseHeaders": headers,
                "body": body,
            },
        )

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
        await self._abort(request_id)

    async def _abort(self, request_id: str) -> None:
        try:
            await self.page.command(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "Aborted"}
            )
        except CDPError as e:
            logger.debug("%s: aborting a paused request: %r", self.page.spec.url, e)
