"""CDPDownloadHandler: rendered requests go to the crawler's CDP pool (through
the render ladder when they have an expectation), the rest to the handler that
was there before (Scrapy's HTTP handler by default)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import ResponseDataLossError, UnsupportedURLSchemeError
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_cdp_pool.core.boundary import to_scrapy_error
from scrapy_cdp_pool.core.exit_status import POOL_UNAVAILABLE_REASON, fail_exit_on
from scrapy_cdp_pool.core.gates import host_of
from scrapy_cdp_pool.core.parts import PROFILE_CONTEXTS, RENDER_LADDER
from scrapy_cdp_pool.core.playwright_keys import PlaywrightMetaWarner
from scrapy_cdp_pool.core.render_stats import RenderStats
from scrapy_cdp_pool.core.rendering import Renderer
from scrapy_cdp_pool.core.runtime import CrawlerRuntime, runtime_of
from scrapy_cdp_pool.errors import (
    CapabilityUnavailable,
    CDPConnectionClosed,
    PoolUnavailable,
    ResponseTooLarge,
)
from scrapy_cdp_pool.render import is_rendered
from scrapy_cdp_pool.scrapy_internals import running_engine

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool

logger = logging.getLogger(__name__)

DEFAULT_FALLBACK = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"


#: the URL schemes the add-on installs :class:`CDPDownloadHandler` for (the
#: browser renders these only; others stay with Scrapy's own handlers)
RENDERED_SCHEMES = ("http", "https")


class CDPDownloadHandler:
    """Download handler for ``http`` and ``https``.

    A request is rendered when ``meta["cdp"]`` is true, when it names a profile
    (``meta["cdp_profile"]``), or when ``CDP_POOL_RENDER_ALL`` is set and
    ``meta["cdp"]`` is not ``False``. Others go to the fallback handler of their
    scheme (``CDP_POOL_FALLBACK_HANDLERS``, set by :class:`~scrapy_cdp_pool.Addon`),
    built on first use.

    Its pool, profiles, render ladder and gates come from the crawler's runtime
    (:mod:`scrapy_cdp_pool.core.runtime`); a render goes through one entry point,
    :class:`~scrapy_cdp_pool.core.rendering.Renderer`.

    :raises ValueError: at start-up, without the add-on (see
        :func:`~scrapy_cdp_pool.core.runtime.runtime_of`).
    """

    lazy = False

    def __init__(self, crawler: Crawler, runtime: CrawlerRuntime) -> None:
        _check_unapplied_settings(crawler)  # before the pool is held
        self.crawler = crawler
        self.runtime = runtime
        self.config = runtime.config
        fallbacks = crawler.settings.getdict("CDP_POOL_FALLBACK_HANDLERS")
        self._fallback_paths: dict[str, Any] = {
            "http": fallbacks.get("http") or DEFAULT_FALLBACK,
            "https": fallbacks.get("https") or DEFAULT_FALLBACK,
        }
        self._fallbacks: dict[str, Any] = {}
        self.pool = runtime.acquire_pool()
        self.ladder = runtime.part(RENDER_LADDER).hold()
        self.live_pages = runtime.live_pages
        self.pacing = runtime.pacing
        self.render_stats = RenderStats(crawler, self.pool)
        self.renderer = Renderer(
            crawler,
            runtime.config,
            runtime.part(PROFILE_CONTEXTS),
            self.live_pages,
            self.pacing,
            self.render_stats,
            self._render_failed,
        )
        self._pool_failed = False
        self._playwright_meta = PlaywrightMetaWarner(extra={"crawler": crawler})
        crawler.signals.connect(self._record_stats, signal=signals.spider_closed)
        self._bindaddress_warned = False
        self._dataloss_warned = False
        self._stray_cancel_warned = False

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
        try:
            expectation = self.ladder.expectation_for(request)
            if expectation is None:  # no render ladder: today's render
                return await self.renderer.render(request, self.pool, timeout_s)
            return await self.ladder.fetch(request, expectation, self, timeout_s)
        except asyncio.CancelledError as e:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # this download itself was cancelled (the crawl's end)
            raise self._stray_cancel(request, e) from e

    def _stray_cancel(self, request: Request, error: asyncio.CancelledError) -> BaseException:
        """A cancellation of something the render awaited (a browser restart,
        a connection retired with the page in flight), not of the download
        itself: a retried download failure. Let out as ``CancelledError`` it
        ended Scrapy 2.19's download task without firing the request's
        Deferred (it catches ``Exception`` only): the request never ended and
        the crawl never exited."""
        self.render_stats.error(error)
        if not self._stray_cancel_warned:
            self._stray_cancel_warned = True
            logger.warning(
                "%s: the render was cancelled from inside (a browser restart or a retired "
                "connection with the page in flight): failed as a retriable download error "
                "(further ones are counted in cdp_pool/errors/CancelledError)",
                request,
                exc_info=error,
                extra={"crawler": self.crawler},
            )
        return to_scrapy_error(
            CDPConnectionClosed(
                "the render was cancelled (a browser restart or a retired connection)"
            ),
            str(request),
        )

    # What the render ladder fetches on its rungs (core.parts.RenderFetches)

    async def plain(self, request: Request, timeout_s: float) -> Response:
        """``request`` through the fallback handler (its ``download_timeout``
        is ``timeout_s`` already)."""
        return await self._plain(request)

    async def render(self, request: Request, pool: ConnectionPool, timeout_s: float) -> Response:
        """``request`` rendered on ``pool`` within ``timeout_s`` seconds."""
        return await self.renderer.render(request, pool, timeout_s)

    async def _plain(self, request: Request) -> Response:
        """``request`` through the fallback handler of its scheme. Scrapy's
        downloader may hold it past a host pause that started after the
        scheduler handed it out: it waits here, holding that downloader slot
        (no browser slot), outside its download_timeout; and for a place in
        its downloader slot and its turn in its spaced slots
        (``DOWNLOAD_DELAY``, see :mod:`~scrapy_cdp_pool.core.pacing`)."""
        async with self.pacing.slot_place(request):  # CONCURRENT_REQUESTS_PER_DOMAIN
            turn = await self.pacing.start_plain(request, host_of(request))
            try:
                response: Response = await self._fallback(request).download_request(request)
            except BaseException:
                self.pacing.end(turn)
                raise
            self.pacing.observe(request, response)  # the pause before the turn's end
            self.pacing.end(turn)
        return response

    def _fallback(self, request: Request) -> Any:
        scheme = urlparse_cached(request).scheme
        handler = self._fallbacks.get(scheme)
        if handler is None:
            handler = build_from_crawler(load_object(self._fallback_paths[scheme]), self.crawler)
            self._fallbacks[scheme] = handler
        return handler

    def _render_failed(self, error: BaseException) -> None:
        """Count a failed render (``cdp_pool/errors/<kind>``); stop the crawl
        on a pool that cannot work at all (no server, no endpoint): say so
        once and stop the crawl cleanly instead of failing every request."""
        self.render_stats.error(error)
        if isinstance(error, ResponseTooLarge):  # logged, as plain Scrapy does
            logger.warning("%s", error, extra={"crawler": self.crawler})
        elif _is_data_loss(error) and not self._dataloss_warned:
            self._dataloss_warned = True
            logger.warning(
                "Got data loss in %s. %s -- This message won't be shown in further requests",
                error,
                _DATA_LOSS_ADVICE["PartialFile" in str(error)],
                extra={"crawler": self.crawler},
            )
        if not isinstance(error, PoolUnavailable) or isinstance(error, CapabilityUnavailable):
            return
        if self._pool_failed or self.pool.state.value in ("closing", "closed"):
            return
        self._pool_failed = True
        fail_exit_on(self.crawler, [POOL_UNAVAILABLE_REASON])
        logger.error(
            "The CDP pool is unavailable, closing the spider: %s",
            error,
            extra={"crawler": self.crawler},
        )
        engine = running_engine(self.crawler)  # none outside a running crawl
        if engine is not None:
            asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason=POOL_UNAVAILABLE_REASON),
                name="cdp-pool close spider",
            )

    async def _record_stats(self) -> None:
        await self.render_stats.closed(self.live_pages)

    async def close(self) -> None:
        """Close the fallback handlers and give the pool back (the last of the
        crawler's handlers closes it)."""
        for handler in self._fallbacks.values():
            await handler.close()
        self._fallbacks.clear()
        await self.ladder.release()
        await self.live_pages.close()
        await self.runtime.release_pool()


#: what the data-loss warning advises, by whether the backend kept nothing
#: (Lightpanda's libcurl error PartialFile: it drops a document cut short)
_DATA_LOSS_ADVICE = {
    False: "If you want to process broken responses set the setting "
    "DOWNLOAD_FAIL_ON_DATALOSS = False",
    True: "Lightpanda keeps nothing of a document cut short, so a rendered request fails "
    "whatever DOWNLOAD_FAIL_ON_DATALOSS says (Chromium hands back what arrived, flagged "
    "dataloss, under DOWNLOAD_FAIL_ON_DATALOSS = False)",
}

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
    if crawler in _WARNED_UNAPPLIED:
        return
    _WARNED_UNAPPLIED.add(crawler)
    if changed:
        logger.warning(
            "%s are not applied to rendered requests (the browser makes its own connections "
            "and TLS handshakes); plain requests keep them",
            ", ".join(changed),
            extra={"crawler": crawler},
        )
    _check_verify_certificates(crawler)
    _check_keylog_file(crawler)


def _check_verify_certificates(crawler: Crawler) -> None:
    """Warn, naming both settings, when ``DOWNLOAD_VERIFY_CERTIFICATES`` is set
    and says otherwise than the browsers do: they verify certificates unless
    ``CDP_POOL_IGNORE_HTTPS_ERRORS`` (a flag of the whole server: Chromium's
    ``--ignore-certificate-errors``, Lightpanda's
    ``--insecure-disable-tls-host-verification``), where plain Scrapy's
    client verifies only with ``DOWNLOAD_VERIFY_CERTIFICATES = True``."""
    settings = crawler.settings
    if settings.getpriority("DOWNLOAD_VERIFY_CERTIFICATES") == SETTINGS_PRIORITIES["default"]:
        return
    verify = settings.getbool("DOWNLOAD_VERIFY_CERTIFICATES")
    ignore = settings.getbool("CDP_POOL_IGNORE_HTTPS_ERRORS")
    if verify != ignore:
        return
    logger.warning(
        "DOWNLOAD_VERIFY_CERTIFICATES = %s does not apply to rendered requests: the browser "
        "%s certificates as CDP_POOL_IGNORE_HTTPS_ERRORS = %s says; plain requests keep it",
        verify,
        "does not verify" if ignore else "verifies",
        ignore,
        extra={"crawler": crawler},
    )


def _check_keylog_file(crawler: Crawler) -> None:
    """Warn, as Scrapy's own client does, when ``SSLKEYLOGFILE`` names a file
    that cannot be written (the browsers, which inherit the variable, would
    write nothing there and say nothing)."""
    filename = os.environ.get("SSLKEYLOGFILE")
    if not filename or sys.flags.ignore_environment:
        return
    try:
        with Path(filename).open("ab"):
            pass
    except OSError as e:
        logger.warning(
            "Cannot write TLS session keys to %s: %s", filename, e, extra={"crawler": crawler}
        )


def _is_data_loss(error: BaseException) -> bool:
    """Whether ``error`` (as the render raised it) is a body cut short."""
    return isinstance(to_scrapy_error(error, ""), ResponseDataLossError)
