"""Renderer: the render path's one entry point for the download handler. A
request in, a Scrapy response out: the render's inputs read from the request
(its profile's context, ``meta["proxy"]``, the :class:`~scrapy_cdp_pool.render.RenderSpec`),
a browser slot leased from the pool within ``download_timeout``, the render
(:func:`~scrapy_cdp_pool.render.render`), what it gives back applied
(cookies into Scrapy's jar, the profile's storage state) and counted
(:class:`~scrapy_cdp_pool.core.render_stats.RenderStats`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest

from scrapy_cdp_pool.core.boundary import scrapy_errors
from scrapy_cdp_pool.core.download_signals import send_download_signals
from scrapy_cdp_pool.core.gates import host_of
from scrapy_cdp_pool.core.pacing import HostPacing, HostPaused
from scrapy_cdp_pool.core.proxy_probe import proxy_refusal
from scrapy_cdp_pool.core.request_meta import read_render_meta
from scrapy_cdp_pool.core.robots import RobotsGate
from scrapy_cdp_pool.errors import (
    ActionError,
    CapabilityUnavailable,
    NavigationFailed,
    ProxyUnsupported,
)
from scrapy_cdp_pool.render import (
    CONSOLE_MESSAGES_META_KEY,
    LIVE_PAGE_META_KEY,
    LivePages,
    RefusedAcceptWarning,
    RefusedUserAgentWarning,
    RenderHooks,
    RenderResult,
    RenderSpec,
    SnapshotWriter,
    build_response,
    build_spec,
    cap_cookie_header,
    cookies_middleware,
    default_header_values,
    merge_into_jar,
    render,
    request_proxy,
    with_request_proxy,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
    from scrapy.http import Response

    from scrapy_cdp_pool.browser.pool.lease import ContextLease
    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
    from scrapy_cdp_pool.core.pacing import Turn
    from scrapy_cdp_pool.core.parts import ProfileContexts
    from scrapy_cdp_pool.core.render_stats import RenderStats
    from scrapy_cdp_pool.render import ContextOptions
    from scrapy_cdp_pool.settings.config import PoolConfig

#: raised by the render as they are: an action's failure (counted), and what
#: the renderer itself handles
_PASSTHROUGH = (HostPaused, ActionError, CapabilityUnavailable)


@dataclass
class _Inputs:
    """What one request asks of the browser, read once before its slot."""

    spec: RenderSpec
    context: ContextOptions | None
    has_profile: bool
    host: str
    robots: bool  # robots.txt asked about the navigations the page starts
    jar: CookiesMiddleware | None
    where: str  # the request (and its proxy) in error messages


@dataclass
class _Attempts:
    """Time spent across a request's attempts at a slot."""

    spent_s: float = 0.0  # under download_timeout: not the waits for a host pause
    slot_at: float = 0.0  # when the page got its browser slot
    #: the attempt's render hooks: its turn in its spaced slots, host pauses
    hooks: RenderHooks | None = None


class Renderer:
    """Renders one crawler's requests; ``on_failure(error)`` is told of each
    failed render (the handler counts it and stops the crawl on a pool that
    cannot work at all)."""

    def __init__(
        self,
        crawler: Crawler,
        config: PoolConfig,
        profiles: ProfileContexts,
        live_pages: LivePages,
        pacing: HostPacing,
        stats: RenderStats,
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self.crawler = crawler
        self.config = config
        self.profiles = profiles
        self.live_pages = live_pages
        self.pacing = pacing
        self.stats = stats
        self._on_failure = on_failure
        self._default_headers = default_header_values(
            crawler.settings.getdict("DEFAULT_REQUEST_HEADERS")
        )
        self._refused_user_agent = RefusedUserAgentWarning()
        self._refused_accept = RefusedAcceptWarning()
        self.robots = RobotsGate(crawler)
        self.snapshots = (
            SnapshotWriter(
                config.snapshot_dir, config.snapshot_max_count, config.snapshot_max_bytes
            )
            if config.snapshot_dir
            else None
        )

    async def render(self, request: Request, pool: ConnectionPool, timeout_s: float) -> Response:
        """``request`` rendered on ``pool`` within ``timeout_s`` seconds.

        :raises Exception: Scrapy's download exceptions (see
            :func:`~scrapy_cdp_pool.core.boundary.scrapy_errors`), an action's
            :class:`~scrapy_cdp_pool.errors.ActionError`, a profile or proxy
            a backend cannot honour.
        """
        inputs = self._inputs(request)
        request.meta.pop(LIVE_PAGE_META_KEY, None)  # a copy's (a retry's) stale page
        attempts = _Attempts(slot_at=time.monotonic())
        async with self.pacing.slot_place(request):  # CONCURRENT_REQUESTS_PER_DOMAIN
            result, live_page = await self._in_slot(request, pool, inputs, timeout_s, attempts)
        seconds = time.monotonic() - attempts.slot_at  # the render, not its wait for a slot
        if result.cookies is not None and inputs.jar is not None:  # [] too: all deleted
            merged = merge_into_jar(inputs.jar, request, result.cookies, inputs.spec.cookies)
            if merged.dropped:
                self.stats.cookies_dropped(request, merged)
        if inputs.context is not None and result.storage_state is not None:
            await self.profiles.save_state(request, result.storage_state)
        self.stats.result(request, result, seconds, pool, inputs.spec.warnsize)
        response = send_download_signals(self.crawler, request, build_response(request, result))
        if live_page is not None:
            self.crawler.stats.inc_value("cdp_pool/live_pages")
            response.meta[LIVE_PAGE_META_KEY] = live_page
        return response

    def _inputs(self, request: Request) -> _Inputs:
        profile = self.profiles.context_for(request)  # a profile's, or None
        try:
            # meta["proxy"] in the context: egress as plain Scrapy's
            context = with_request_proxy(request, profile, request_proxy(request))
        except ProxyUnsupported as e:
            self.stats.error(e)
            raise
        spec = build_spec(
            request,
            self.config,
            self._default_headers,
            read_render_meta(request, self.config),
            context=context,
            signed_out=self.profiles.signed_out_rule(request) if profile else None,
        )
        host = host_of(request)
        sent = cap_cookie_header(spec.cookies)
        if len(sent) < len(spec.cookies):
            self.stats.cookies_not_sent(request, host, len(spec.cookies) - len(sent))
            spec = dataclasses.replace(spec, cookies=sent)
        where = str(request)
        if context is not None and context.proxy_server:
            whose = "the profile's proxy" if profile is not None else "meta['proxy']"
            where += f" (through {whose} {context.proxy_server})"
        robots = self.robots.enabled and not request.meta.get("dont_obey_robotstxt")
        if robots or (self.pacing.checks_leaving and spec.allow_private_networks):
            # robots.txt asks about each navigation; a cluster lease is checked
            # again where the navigation leaves (without private networks
            # allowed, every request is paused already)
            spec = dataclasses.replace(spec, pause_navigations=True)
        return _Inputs(
            spec=spec,
            context=context,
            has_profile=profile is not None,
            host=host,
            robots=robots,
            jar=self._cookie_jar_middleware(request),
            where=where,
        )

    async def _in_slot(
        self,
        request: Request,
        pool: ConnectionPool,
        inputs: _Inputs,
        timeout_s: float,
        attempts: _Attempts,
    ) -> tuple[RenderResult, Any]:
        """The render in a slot of ``pool``: the slot is given back and taken
        again while the host is paused; before it takes a slot, it waits for
        its turn in its spaced slots (``DOWNLOAD_DELAY``, see
        :mod:`~scrapy_cdp_pool.core.pacing`). Those waits are not counted in
        ``timeout_s``."""
        while True:
            await self.pacing.wait(inputs.host)
            turn = await self.pacing.reserve(request)
            attempts.hooks = self._hooks(request, inputs, turn)
            started = time.monotonic()
            try:
                return await self._attempt(request, pool, inputs, timeout_s, attempts)
            except HostPaused:
                continue  # paused while it waited for its slot: slot given back
            except CapabilityUnavailable as e:  # this profile only, not the whole pool
                if not inputs.has_profile:  # its meta["proxy"]
                    raise ProxyUnsupported(f"{request}: meta['proxy']: {e}") from e
                raise self.profiles.unsupported(request, e) from e
            finally:
                self.pacing.end(turn)
                attempts.spent_s += time.monotonic() - started

    async def _attempt(
        self,
        request: Request,
        pool: ConnectionPool,
        inputs: _Inputs,
        timeout_s: float,
        attempts: _Attempts,
    ) -> tuple[RenderResult, Any]:
        """One lease of a slot; download_timeout bounds the page, not a wait
        for a slot or a dedicated server's turn (see ConnectionPool.lease).
        A page that could not connect through its proxy is named
        :class:`~scrapy_cdp_pool.errors.ProxyAuthenticationRejected` when the
        proxy answers 407 (:mod:`~scrapy_cdp_pool.core.proxy_probe`)."""
        with scrapy_errors(inputs.where, timeout_s, self._failed, _PASSTHROUGH):
            try:
                return await self._leased(request, pool, inputs, timeout_s, attempts)
            except NavigationFailed as e:  # Lightpanda's CouldntConnect for a proxy's 407
                named = await proxy_refusal(e, request.url, inputs.context, inputs.where)
                if named is None:
                    raise
                raise named from e

    async def _leased(
        self,
        request: Request,
        pool: ConnectionPool,
        inputs: _Inputs,
        timeout_s: float,
        attempts: _Attempts,
    ) -> tuple[RenderResult, Any]:
        spec = inputs.spec
        requires = inputs.context.requirements() if inputs.context is not None else frozenset()
        options = inputs.context.server_options() if inputs.context is not None else None
        in_lease = self._in_lease(request, pool, inputs, attempts)
        lease_cm = pool.lease(requires, options, timeout_s - attempts.spent_s)
        if spec.include_page:  # the lease outlives this call (render/_live/live_page.py)
            save = None
            if inputs.context is not None and inputs.context.save_state:
                # saved when the page is closed, before its profile is released
                save = partial(self.profiles.save_state, request)
            return await self.live_pages.render(
                lease_cm,
                in_lease,
                request,
                timeout_s,
                self.config.max_message_bytes,
                inputs.context,
                save,
            )
        async with lease_cm as lease:
            return await in_lease(lease), None

    def _in_lease(
        self, request: Request, pool: ConnectionPool, inputs: _Inputs, attempts: _Attempts
    ) -> Callable[[ContextLease], Awaitable[RenderResult]]:
        async def in_lease(lease: ContextLease) -> RenderResult:
            attempts.slot_at = time.monotonic()
            self.pacing.check_known(inputs.host)  # before a context is made
            self.stats.page(pool, lease)
            extra = {"crawler": self.crawler}
            self._refused_user_agent.check(inputs.spec, lease.info, extra)
            self._refused_accept.check(
                inputs.spec.dialogs == "accept", lease.info.backend.answers_dialogs, extra
            )
            return await render(
                lease,
                inputs.spec,
                attempts.hooks,
                collect_cookies=inputs.jar is not None,
                on_failure=self._failure_hook(request, inputs.spec),
            )

        return in_lease

    def _hooks(self, request: Request, inputs: _Inputs, turn: Turn | None) -> RenderHooks | None:
        """One attempt's render hooks: its turn and the host's pauses
        (:class:`~scrapy_cdp_pool.core.pacing.HostPacing`), robots.txt for
        the navigations the page starts."""
        hooks = self.pacing.hooks(request, inputs.host, turn)
        if inputs.robots:
            allows = self.robots.allows
            hooks = dataclasses.replace(hooks or RenderHooks(), allows_navigation=allows)
        return hooks

    def _failed(self, error: BaseException) -> None:
        if not isinstance(error, (HostPaused, IgnoreRequest)):  # waits or drops, not failures
            self._on_failure(error)

    def _failure_hook(self, request: Request, spec: RenderSpec) -> Any:
        """The render's ``on_failure``, or ``None`` when it has nothing to do:
        the page's console messages (``meta["cdp_console"]``) go on the
        failed request's meta as ``cdp_console_messages`` (the errback's
        ``failure.request.meta``, the failures file), and a failure snapshot
        is written, named by the request's fingerprint
        (``CDP_POOL_SNAPSHOT_DIR``)."""
        writer = self.snapshots
        if writer is None and not spec.console:
            return None
        stats = self.crawler.stats

        async def on_failure(page: Any, error: BaseException) -> None:
            if page.console is not None:
                request.meta[CONSOLE_MESSAGES_META_KEY] = page.console.messages()
            if writer is None:
                return
            fingerprint = self.crawler.request_fingerprinter.fingerprint(request).hex()
            if await writer.take(page, fingerprint, error):
                stats.inc_value("cdp_pool/snapshots_written")
            else:
                stats.inc_value("cdp_pool/snapshots_skipped")

        return on_failure

    def _cookie_jar_middleware(self, request: Request) -> CookiesMiddleware | None:
        """Where the context's cookies go after the render: Scrapy's running
        ``CookiesMiddleware``, for a request without a profile (its cookies
        stay in the profile) and without ``meta["dont_merge_cookies"]``;
        else ``None`` (nothing is read from the context)."""
        if request.meta.get("dont_merge_cookies", False) or request.meta.get("cdp_profile"):
            return None
        return cookies_middleware(self.crawler)
