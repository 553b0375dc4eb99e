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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_cdp_pool.browser.cdp import CDPError, CDPRequestTooLarge
from scrapy_cdp_pool.browser.pool.favicon_block import is_favicon
from scrapy_cdp_pool.errors import (
    CDPPoolError,
    NavigationForbidden,
    PrivateNavigationRefused,
    ResponseTooLarge,
)
from scrapy_cdp_pool.render._page.body_stream import read_body_prefix
from scrapy_cdp_pool.render._page.document_kind import (
    content_length,
    joined,
    same_origin,
    shareable,
)
from scrapy_cdp_pool.render._page.document_response import DocumentResponses, abort
from scrapy_cdp_pool.render._page.download_pause import is_page_download, take_download
from scrapy_cdp_pool.render._page.private_network import PrivateNetworkRule
from scrapy_cdp_pool.settings.url_patterns import matches_any

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page_handle import PageHandle

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


class FetchInterceptor:
    """Handles ``Fetch.requestPaused`` and ``Fetch.authRequired`` of ``page``."""

    def __init__(self, page: PageHandle) -> None:
        self.page = page
        #: the main frame's document responses
        self.documents = DocumentResponses(page)
        self.override_pending = page.spec.overrides_request
        self._credentials_given: set[str] = set()  # URLs answered with credentials
        #: see RenderHooks.allows_navigation
        self.allows_navigation: Callable[[str], bool] | None = None
        #: see RenderHooks.before_leaving
        self.before_leaving: Callable[[], None] | None = None
        spec = page.spec
        self.private_rule = None if spec.allow_private_networks else PrivateNetworkRule(spec.url)

    async def on_paused(self, params: dict[str, Any]) -> None:
        """Answer one ``Fetch.requestPaused``: at the response stage (a
        response or its error), else at the request stage."""
        request_id = params["requestId"]
        try:
            if "responseStatusCode" in params or "responseErrorReason" in params:
                await self._on_response(params)
            else:
                await self._on_request(request_id, params)
        except CDPRequestTooLarge as e:  # the rewritten request (its body) was refused
            self.page.fail(e)
        except CDPError as e:
            # The page moved on (navigated, closed) before the answer: nothing to do.
            logger.debug("%s: answering a paused request: %r", self.page.spec.url, e)
        except ResponseTooLarge as e:
            self.page.fail(e)
            await abort(self.page, request_id)

    async def _on_request(self, request_id: str, params: dict[str, Any]) -> None:
        """A request paused at the request stage: blocked, refused (a
        private network, robots.txt), rewritten (the request's own
        navigation) or let through."""
        resource_type = str(params.get("resourceType", "Other")).lower()
        reason = self._blocked_as(params, resource_type)
        if reason is not None:
            await self._block(request_id, reason)
        elif await self._refuses_private(params, resource_type):
            await self._refuse_private(request_id, params, resource_type)
        elif self._refuses_navigation(params, resource_type):
            url = str(params.get("request", {}).get("url", ""))
            await self._refuse_navigation(request_id, url)
        elif resource_type == "document" and params.get("frameId") == self.page.target_id:
            await self._on_navigation(request_id, params)
        else:
            await self.page.command("Fetch.continueRequest", {"requestId": request_id})

    def _blocked_as(self, params: dict[str, Any], resource_type: str) -> str | None:
        """The key a request paused at the request stage is blocked under
        (its resource type, :data:`FAVICON`, ``"url"``), or None."""
        if resource_type in self.page.spec.block_resources:
            return resource_type
        if resource_type == "other" and is_favicon(params):
            return FAVICON
        if self._blocks_url(params):
            return "url"
        return None

    async def _refuse_private(
        self, request_id: str, params: dict[str, Any], resource_type: str
    ) -> None:
        """Fail a request to a private network the page may not reach; the
        page's own navigation to one ends the render."""
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

    async def _on_navigation(self, request_id: str, params: dict[str, Any]) -> None:
        """The main frame's document request: let through when it may leave
        (rewritten, the first time, when the Scrapy request needs it)."""
        if not await self._may_leave(request_id):
            return  # failed: the render ends with why
        if self.override_pending:
            self.override_pending = False
            await self.page.command("Fetch.continueRequest", self._overrides(params))
        else:
            await self.page.command("Fetch.continueRequest", {"requestId": request_id})

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

    async def _on_response(self, params: dict[str, Any]) -> None:
        request_id = params["requestId"]
        if is_page_download(self.page, params):
            await take_download(self.page, params)
            return
        is_main = (
            params.get("frameId") == self.page.target_id
            and str(params.get("resourceType", "")).lower() == "document"
            and "responseErrorReason" not in params
        )
        if not is_main:
            await self._on_subresource_response(request_id, params)
            return
        await self.documents.on_response(request_id, params)

    async def _on_subresource_response(self, request_id: str, params: dict[str, Any]) -> None:
        """A response of the page's own requests (not its main document):
        failed past ``DOWNLOAD_MAXSIZE`` (announced), kept out of a shared
        cache when it must not be shared, else let through."""
        if self._past_maxsize(params):
            await self._block(request_id, TOO_LARGE)
        elif self.page.guard_cache and not shareable(params.get("responseHeaders", [])):
            await self._fulfill_unstored(params)
        else:
            self._watch_unbounded(params)
            await self.page.command("Fetch.continueRequest", {"requestId": request_id})

    def _watch_unbounded(self, params: dict[str, Any]) -> None:
        """A response of the page's own let through whose size no
        ``Content-Length`` bounds (chunked; or compressed, which bounds only
        the bytes on the wire) is counted as it arrives
        (:meth:`BodySizeGuard.watch_unbounded`): past the request's maxsize,
        the page stops loading, which fails it (``Page._on_data``)."""
        network_id = params.get("networkId")
        if network_id and self._unbounded(params):
            self.page.body_size.watch_unbounded(str(network_id))

    def _unbounded(self, params: dict[str, Any]) -> bool:
        """Whether the request has a maxsize that no ``Content-Length`` of
        this response bounds (none, or a compressed body's)."""
        if not self.page.spec.maxsize or "responseErrorReason" in params:
            return False
        headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
        encoded = any(k.lower() == "content-encoding" and v.strip() for k, v in headers)
        return encoded or content_length(headers) is None

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
        ``Content-Length`` are dropped. A body that no ``Content-Length``
        bounds is read as a stream, on a backend that can (Chromium), and the
        response failed past the request's maxsize, counted as :data:`TOO_LARGE`
        (``Fetch.getResponseBody`` read a 256 MiB chunked one whole: the
        browser stopped answering and was restarted)."""
        request_id = params["requestId"]
        if self.page.backend.streams_response_bodies and self._unbounded(params):
            maxsize = self.page.spec.maxsize
            read, complete = await read_body_prefix(self.page, request_id, maxsize)
            if not complete:
                await self._block(request_id, TOO_LARGE)
                return
            body = base64.b64encode(read).decode("ascii")
        else:
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
