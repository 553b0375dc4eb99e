"""CDPDownloadHandler: rendered requests go to the crawler's CDP pool, the rest
to the handler that was there before (Scrapy's HTTP handler by default)."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
from scrapy.exceptions import ResponseDataLossError, UnsupportedURLSchemeError
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_cdp_pool.boundary import error_kind, scrapy_errors, to_scrapy_error
from scrapy_cdp_pool.errors import (
    ActionError,
    CapabilityUnavailable,
    PoolUnavailable,
    ProxyUnsupported,
    ResponseTooLarge,
)
from scrapy_cdp_pool.ladder.climb import CHROMIUM_RUNG, HTTP, Fetch
from scrapy_cdp_pool.ladder.plain import decoded
from scrapy_cdp_pool.playwright_keys import PlaywrightMetaWarner
from scrapy_cdp_pool.render.cookies import cookies_middleware, merge_into_jar
from scrapy_cdp_pool.render.document import DocumentResponse
from scrapy_cdp_pool.render.interception import FAVICON
from scrapy_cdp_pool.render.live_page import LIVE_PAGE_META_KEY
from scrapy_cdp_pool.render.redirects import is_handed_back
from scrapy_cdp_pool.render.request_proxy import request_proxy, with_request_proxy
from scrapy_cdp_pool.render.response import build_response
from scrapy_cdp_pool.render.session import RenderHooks, RenderResult, render
from scrapy_cdp_pool.render.snapshots import SnapshotWriter
from scrapy_cdp_pool.render.spec import build_spec, default_header_values, is_rendered
from scrapy_cdp_pool.render.user_agent import RefusedUserAgentWarning
from scrapy_cdp_pool.runtime import CrawlerRuntime, runtime_of
from scrapy_cdp_pool.scheduling.gates import HostPauses, host_of
from scrapy_cdp_pool.scrapy_internals import running_engine

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.pool.lease import ContextLease
    from scrapy_cdp_pool.pool.pool import ConnectionPool

logger = logging.getLogger(__name__)

DEFAULT_FALLBACK = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"


class _HostPaused(Exception):
    """The request's host was paused while the request waited for its slot."""


#: raised by the render as they are: an action's failure (counted), and what
#: the handler itself handles
_PASSTHROUGH = (_HostPaused, ActionError, CapabilityUnavailable)


class CDPDownloadHandler:
    """Download handler for ``http`` and ``https``.

    A request is rendered when ``meta["cdp"]`` is true, when it names a profile
    (``meta["cdp_profile"]``), or when ``CDP_POOL_RENDER_ALL`` is set and
    ``meta["cdp"]`` is not ``False``. Others go to the fallback handler of their
    scheme (``CDP_POOL_FALLBACK_HANDLERS``, set by :class:`~scrapy_cdp_pool.Addon`),
    built on first use.

    Its pool, identities and gates come from the crawler's runtime
    (:mod:`scrapy_cdp_pool.runtime`).

    :raises ValueError: at start-up, without the add-on (see
        :func:`~scrapy_cdp_pool.runtime.runtime_of`).
    """

    lazy = False

    def __init__(self, crawler: Crawler, runtime: CrawlerRuntime) -> None:
        _check_unapplied_settings(crawler)  # before the pool is held
        self.crawler = crawler
        self.runtime = runtime
        self.config = runtime.config
        self.stats = crawler.stats
        fallbacks = crawler.settings.getdict("CDP_POOL_FALLBACK_HANDLERS")
        self._fallback_paths: dict[str, Any] = {
            "http": fallbacks.get("http") or DEFAULT_FALLBACK,
            "https": fallbacks.get("https") or DEFAULT_FALLBACK,
        }
        self._fallbacks: dict[str, Any] = {}
        self._default_headers = default_header_values(
            crawler.settings.getdict("DEFAULT_REQUEST_HEADERS")
        )
        self.pool = runtime.acquire_pool()
        self.identities = runtime.identities
        self.ladder = runtime.ladder.hold()
        self._rungs = self._ladder_rungs()
        self.live_pages = runtime.live_pages
        self._pool_failed = False
        self._refused_user_agent = RefusedUserAgentWarning()
        self._playwright_meta = PlaywrightMetaWarner(extra={"crawler": crawler})
        self.snapshots = (
            SnapshotWriter(
                self.config.snapshot_dir,
                self.config.snapshot_max_count,
                self.config.snapshot_max_bytes,
            )
            if self.config.snapshot_dir
            else None
        )
        crawler.signals.connect(self._record_stats, signal=signals.spider_closed)
        self._bindaddress_warned = False
        self._dataloss_warned = False
        _check_unapplied_settings(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, runtime_of(crawler))

    def should_render(self, request: Request) -> bool:
        return is_rendered(request, self.config.render_all)

    async def download_request(self, request: Request) -> Response:
        scheme = urlparse_cached(request).scheme
        if scheme not in self._fallback_paths:
            # as Scrapy's handlers: only a handler's own schemes come here
            raise UnsupportedURLSchemeError(
                f"Unsupported URL scheme '{scheme}': {type(self).__name__} handles http and https"
            )
        self._playwright_meta.check(request.meta)  # scrapy-playwright's keys: warned once
        if not self.should_render(request):
            return await self._plain(request)
        if request.meta.get("bindaddress") and not self._bindaddress_warned:
            self._bindaddress_warned = True
            logger.warning(
                "The 'bindaddress' request meta key is not supported by %s for rendered "
                "requests and will be ignored (the browser opens its own connections)",
                type(self).__name__,
                extra={"crawler": self.crawler},
            )
        timeout_s = float(request.meta.get("download_timeout", self.config.download_timeout_s))
        expectation = self.ladder.expectation_for(request)
        if expectation is None:  # no render ladder: today's render
            return await self._render(request, self.pool, timeout_s)
        return await self.ladder.climb(request, expectation, self._rungs, timeout_s)

    async def _plain(self, request: Request) -> Response:
        """``request`` through the fallback handler of its scheme."""
        pauses = self.runtime.gates.host_pauses
        # Scrapy's downloader may hold it past a pause that started
        # after the scheduler handed it out: it waits here, holding that
        # downloader slot (no browser slot), outside its download_timeout.
        if pauses is not None:
            await self._wait_pause(pauses, host_of(request))
        response: Response = await self._fallback(request).download_request(request)
        if pauses is not None:
            pauses.observe(
                request, response.url, response.status, response.headers.get(b"Retry-After")
            )
        return response

    def _ladder_rungs(self) -> dict[str, Fetch]:
        """How the render ladder fetches on each of its rungs (see ladder/climb.py)."""

        async def plain(request: Request, left_s: float) -> Response:
            within = request.replace(meta={**request.meta, "download_timeout": left_s})
            return decoded(self.crawler, request, await self._plain(within))

        async def primary(request: Request, left_s: float) -> Response:
            return await self._render(request, self.pool, left_s)

        async def chromium(request: Request, left_s: float) -> Response:
            return await self._render(request, await self.ladder.chromium.pool(), left_s)

        rungs: dict[str, Fetch] = {name: primary for name in self.ladder.rungs}
        rungs[HTTP] = plain
        if self.config.fallback == CHROMIUM_RUNG:
            rungs[CHROMIUM_RUNG] = chromium
        return rungs

    async def _render(self, request: Request, pool: ConnectionPool, timeout_s: float) -> Response:
        """``request`` rendered on ``pool`` within ``timeout_s`` seconds."""
        pauses = self.runtime.gates.host_pauses
        profile = self.identities.context_for(request)  # a profile's, or None
        try:
            # meta["proxy"] in the context: egress as plain Scrapy's
            context = with_request_proxy(request, profile, request_proxy(request))
        except ProxyUnsupported as e:
            self.stats.inc_value(f"cdp_pool/errors/{error_kind(e)}")
            raise
        spec = build_spec(
            request,
            self.config,
            self._default_headers,
            context=context,
            signed_out=self.identities.signed_out_rule(request) if profile else None,
        )
        requires = context.requirements() if context is not None else frozenset()
        server_options = context.server_options() if context is not None else None
        host = host_of(request)
        hooks = self._hooks(request, pauses, host)
        spent_s = 0.0  # under download_timeout: not the waits for a host pause
        slot_at = time.monotonic()  # when the page got its browser slot
        live_page = None
        request.meta.pop(LIVE_PAGE_META_KEY, None)  # a copy's (a retry's) stale page
        jar_middleware = self._cookie_jar_middleware(request)
        where = str(request)
        if context is not None and context.proxy_server:
            whose = "the profile's proxy" if profile is not None else "meta['proxy']"
            where += f" (through {whose} {context.proxy_server})"
        while True:
            if pauses is not None:
                await self._wait_pause(pauses, host)
            started = time.monotonic()

            async def in_lease(lease: ContextLease) -> RenderResult:
                nonlocal slot_at
                slot_at = time.monotonic()
                if pauses is not None and pauses.remaining(host) > 0:
                    raise _HostPaused  # before a context is made
                self._count_page(pool, lease)
                self._refused_user_agent.check(spec, lease.info, {"crawler": self.crawler})
                return await render(
                    lease,
                    spec,
                    hooks,
                    collect_cookies=jar_middleware is not None,
                    on_failure=self._snapshot_hook(request),
                )

            try:
                # download_timeout bounds the page, not a wait for a slot or a
                # dedicated server's turn (see ConnectionPool.lease).
                with scrapy_errors(where, timeout_s, self._count_error, _PASSTHROUGH):
                    lease_cm = pool.lease(requires, server_options, timeout_s - spent_s)
                    if spec.include_page:  # the lease outlives this call (render/live_page.py)
                        result, live_page = await self.live_pages.render(
                            lease_cm, in_lease, request, timeout_s, self.config.max_message_bytes
                        )
                    else:
                        async with lease_cm as lease:
                            result = await in_lease(lease)
                break
            except _HostPaused:
                continue  # paused while it waited for its slot: slot given back
            except CapabilityUnavailable as e:  # this profile only, not the whole pool
                if profile is None:  # its meta["proxy"]
                    raise ProxyUnsupported(f"{request}: meta['proxy']: {e}") from e
                raise self.identities.unsupported(request, e) from e
            finally:
                spent_s += time.monotonic() - started
        seconds = time.monotonic() - slot_at  # the render, not its wait for a slot
        if result.cookies and jar_middleware is not None:
            merge_into_jar(jar_middleware, request, result.cookies, spec.cookies)
        if context is not None and result.storage_state is not None:
            await self.identities.save_state(request, result.storage_state)
        self.stats.inc_value(_outcome_stat(result))
        self.stats.max_value("cdp_pool/render_seconds_max", round(seconds, 3))
        self.stats.max_value("cdp_pool/pages_in_flight_max", pool.pages_in_flight_max)
        for resource_type, count in result.blocked.items():
            if resource_type == FAVICON:  # the browser's own request, not the page's
                self.stats.inc_value("cdp_pool/favicon_requests_blocked", count)
                continue
            self.stats.inc_value("cdp_pool/resources_blocked", count)
            self.stats.inc_value(f"cdp_pool/resources_blocked/{resource_type}", count)
        if result.network is not None:
            self.stats.inc_value("cdp_pool/network_captured", len(result.network))
            skipped = sum(1 for entry in result.network if entry["body_skipped"])
            if skipped:
                self.stats.inc_value("cdp_pool/network_bodies_skipped", skipped)
        if result.console is not None:
            kinds = [entry["type"] for entry in result.console]
            messages = sum(1 for kind in kinds if kind not in ("exception", "truncated"))
            if messages:
                self.stats.inc_value("cdp_pool/console_messages", messages)
            if "exception" in kinds:
                self.stats.inc_value("cdp_pool/page_errors", kinds.count("exception"))
        announced = None if result.rendered else _content_length(result.headers)
        size = announced if announced is not None else len(result.body)
        if spec.warnsize and size > spec.warnsize:
            # meta["download_warnsize"] or DOWNLOAD_WARNSIZE, in plain Scrapy's words
            logger.warning(
                "%s %d bytes which is larger than download warn size (%d) in request %s.",
                "Received" if announced is None else "Expected to receive",
                size,
                spec.warnsize,
                request,
                extra={"crawler": self.crawler},
            )
        response = build_response(request, result)
        if live_page is not None:
            self.stats.inc_value("cdp_pool/live_pages")
            response.meta[LIVE_PAGE_META_KEY] = live_page
        return response

    def _count_error(self, error: BaseException) -> None:
        """Count a failed render (``cdp_pool/errors/<kind>``); stop the crawl
        on a pool that cannot work at all."""
        if isinstance(error, _HostPaused):
            return
        self.stats.inc_value(f"cdp_pool/errors/{error_kind(error)}")
        if isinstance(error, ResponseTooLarge):  # logged, as plain Scrapy does
            logger.warning("%s", error, extra={"crawler": self.crawler})
        elif _is_data_loss(error) and not self._dataloss_warned:
            self._dataloss_warned = True
            logger.warning(
                "Got data loss in %s (its body was cut short; a rendered request fails, "
                "DOWNLOAD_FAIL_ON_DATALOSS or not) -- This message won't be shown in further "
                "requests",
                error,
                extra={"crawler": self.crawler},
            )
        if isinstance(error, PoolUnavailable) and not isinstance(error, CapabilityUnavailable):
            self._on_pool_unavailable(error)

    def _snapshot_hook(self, request: Request) -> Any:
        """The render's ``on_failure``: a failure snapshot named by the
        request's fingerprint (``CDP_POOL_SNAPSHOT_DIR``), or ``None``."""
        writer = self.snapshots
        if writer is None:
            return None

        async def snapshot(page: Any, error: BaseException) -> None:
            fingerprint = self.crawler.request_fingerprinter.fingerprint(request).hex()
            if await writer.take(page, fingerprint, error):
                self.stats.inc_value("cdp_pool/snapshots_written")
            else:
                self.stats.inc_value("cdp_pool/snapshots_skipped")

        return snapshot

    def _cookie_jar_middleware(self, request: Request) -> CookiesMiddleware | None:
        """Where the context's cookies go after the render: Scrapy's running
        ``CookiesMiddleware``, for a request without a profile (its cookies
        stay in the profile) and without ``meta["dont_merge_cookies"]``;
        else ``None`` (nothing is read from the context)."""
        if request.meta.get("dont_merge_cookies", False) or request.meta.get("cdp_profile"):
            return None
        return cookies_middleware(self.crawler)

    def _hooks(self, request: Request, pauses: HostPauses | None, host: str) -> RenderHooks | None:
        """With host pauses, the render's hooks: its navigation does not start
        while ``host`` is paused (:class:`_HostPaused`: the slot is given back),
        and a response's headers that ask for a pause start it at once, before
        the page's slot is released."""
        if pauses is None:
            return None

        def before_navigate() -> None:
            if pauses.remaining(host) > 0:
                raise _HostPaused

        def on_document(document: DocumentResponse) -> None:
            pauses.observe(request, document.url, document.status, _retry_after(document.headers))

        return RenderHooks(before_navigate=before_navigate, on_document=on_document)

    async def _wait_pause(self, pauses: HostPauses, host: str) -> None:
        """Wait while ``host`` is paused (a 429 or 503 with ``Retry-After``
        received after the scheduler handed this request out)."""
        if pauses.remaining(host) > 0:
            self.stats.inc_value("cdp_pool/host_pause_waits")
            await pauses.wait_open(host)

    def _fallback(self, request: Request) -> Any:
        scheme = urlparse_cached(request).scheme
        handler = self._fallbacks.get(scheme)
        if handler is None:
            handler = build_from_crawler(load_object(self._fallback_paths[scheme]), self.crawler)
            self._fallbacks[scheme] = handler
        return handler

    def _on_pool_unavailable(self, error: PoolUnavailable) -> None:
        """The pool cannot work at all (no server, no endpoint): say so once and
        stop the crawl cleanly instead of failing every request."""
        if self._pool_failed or self.pool.state.value in ("closing", "closed"):
            return
        self._pool_failed = True
        logger.error(
            "The CDP pool is unavailable, closing the spider: %s",
            error,
            extra={"crawler": self.crawler},
        )
        engine = running_engine(self.crawler)  # none outside a running crawl
        if engine is not None:
            asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason="cdp_pool_unavailable"),
                name="cdp-pool close spider",
            )

    def _count_page(self, pool: ConnectionPool, lease: ContextLease) -> None:
        """This crawler's pages per connection of the pool (or on dedicated
        servers), counted in its own stats: exact on a shared pool too; the
        render ladder's Chromium pool's under ``cdp_pool/ladder/chromium``."""
        connection = lease.connection
        if pool is not self.pool:
            self.stats.inc_value(f"cdp_pool/ladder/chromium/connection/{connection.index}/pages")
        elif pool.owns(connection):
            self.stats.inc_value(f"cdp_pool/connection/{connection.index}/pages")
        else:
            self.stats.inc_value("cdp_pool/dedicated_servers/pages")

    async def _record_stats(self) -> None:
        """At spider close (before the stats are dumped): the pool's contexts
        opened and closed, reconnects and server restarts (the whole pool's,
        shared or not); live pages still open are closed first."""
        live = self.live_pages
        await live.close()
        if live.opened:
            self.stats.set_value("cdp_pool/live_pages_open_max", live.open_max)
            self.stats.set_value("cdp_pool/live_pages_closed_at_deadline", live.closed_at_deadline)
        await self.pool.wait_disposed()
        rows = self.pool.snapshot()
        if not rows:
            return
        for key in ("contexts_opened", "contexts_closed", "reconnects", "retired"):
            self.stats.set_value(f"cdp_pool/{key}", sum(row[key] for row in rows))
        if self.pool.server is not None:
            self.stats.set_value("cdp_pool/server_restarts", self.pool.server.restarts)
        dedicated = self.pool.dedicated
        if dedicated is not None and dedicated.started:
            self.stats.set_value("cdp_pool/dedicated_servers/started", dedicated.started)
            self.stats.set_value("cdp_pool/dedicated_servers/stopped", dedicated.stopped)
            self.stats.set_value("cdp_pool/dedicated_servers/running_max", dedicated.running_max)

    async def close(self) -> None:
        """Close the fallback handlers and give the pool back (the last of the
        crawler's handlers closes it)."""
        for handler in self._fallbacks.values():
            await handler.close()
        self._fallbacks.clear()
        await self.ladder.release()
        await self.live_pages.close()
        await self.runtime.release_pool()


#: Scrapy's TLS version names (``DOWNLOAD_TLS_MIN_VERSION``/``_MAX_VERSION``)
_TLS_VERSIONS = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")

#: Scrapy settings of its own HTTP client that a browser cannot apply
_UNAPPLIED_SETTINGS = (
    "DOWNLOAD_BIND_ADDRESS",
    "DOWNLOAD_TLS_MIN_VERSION",
    "DOWNLOAD_TLS_MAX_VERSION",
    "DOWNLOADER_CLIENT_TLS_CIPHERS",
)


#: crawlers already warned about Scrapy settings a browser does not apply (one
#: handler per scheme is built: the warning is said once per crawler)
_WARNED_UNAPPLIED: weakref.WeakSet[Crawler] = weakref.WeakSet()


def _check_unapplied_settings(crawler: Crawler) -> None:
    """Refuse a TLS version Scrapy would refuse (its own message), and warn
    once per crawler about Scrapy's client settings a browser does not apply
    to rendered requests (plain requests, through the fallback handler, keep
    them)."""
    settings = crawler.settings
    for name in ("DOWNLOAD_TLS_MIN_VERSION", "DOWNLOAD_TLS_MAX_VERSION"):
        value = settings.get(name)
        if value is not None and value not in _TLS_VERSIONS:
            raise ValueError(f"Unknown {name} value: {value}")
    changed = [
        name
        for name in _UNAPPLIED_SETTINGS
        if settings.getpriority(name) != SETTINGS_PRIORITIES["default"]
    ]
    if changed and crawler not in _WARNED_UNAPPLIED:
        _WARNED_UNAPPLIED.add(crawler)
        logger.warning(
            "%s are not applied to rendered requests (the browser makes its own connections "
            "and TLS handshakes); plain requests keep them",
            ", ".join(changed),
            extra={"crawler": crawler},
        )


def _content_length(headers: list[tuple[str, str]]) -> int | None:
    for name, value in headers:
        if name.lower() == "content-length" and value.strip().isdigit():
            return int(value)
    return None


def _is_data_loss(error: BaseException) -> bool:
    """Whether ``error`` (as the render raised it) is a body cut short."""
    return isinstance(to_scrapy_error(error, ""), ResponseDataLossError)


def _outcome_stat(result: RenderResult) -> str:
    """The stat a render counts in: a page, a raw document, or a redirect
    returned to Scrapy's ``RedirectMiddleware``."""
    if result.rendered:
        return "cdp_pool/pages"
    if is_handed_back(result.status, result.headers):
        return "cdp_pool/redirects_returned"
    return "cdp_pool/documents_raw"


def _retry_after(headers: list[tuple[str, str]]) -> bytes | None:
    """The ``Retry-After`` value among a render's response headers."""
    for name, value in headers:
        if name.lower() == "retry-after":
            return value.encode("latin-1", "replace")
    return None
