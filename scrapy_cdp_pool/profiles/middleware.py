"""ProfileMiddleware: requests that name a stored profile
(``meta["cdp_profile"]``) are sent as that profile, or fail with a reason.

Installed by the add-on at order 970, the closest to the downloader: it sees
each download's own outcome before :class:`GateReleaseMiddleware` (950) frees
the profile, so a sign-in runs while the profile is still held and no other
request of it starts meanwhile.

- A profile request is rendered in a context made from the profile (by the
  handler); Scrapy's cookie jar is kept out of it both ways
  (``dont_merge_cookies``), so profiles never share cookies.
- A response that shows the profile signed out (``CDP_POOL_SIGNED_OUT`` or the
  profile's ``signedOut``) is not given to the spider: with a sign-in hook (the
  spider's ``cdp_sign_in(profile, page)`` or ``CDP_POOL_SIGN_IN``) it signs in
  once in a Playwright page, saves the new state and retries the request;
  without one, or if that did not help, the profile is retired ("profile signed
  out") and its requests fail at once.
- Health: consecutive failures (download errors, 401/403/407/429) past
  ``CDP_POOL_PROFILE_MAX_FAILURES`` retire the profile for the crawl.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import load_object

from scrapy_cdp_pool.browser.pool.pool import PoolState
from scrapy_cdp_pool.browser.pool.server_options import SERVER_LEVEL
from scrapy_cdp_pool.core.gates import RequestGates, profile_of
from scrapy_cdp_pool.core.runtime import CrawlerRuntime, runtime_of
from scrapy_cdp_pool.errors import (
    PoolStartTimeout,
    PoolUnavailable,
    ProfileError,
    ProfileFileError,
    ProfileSignedOut,
    SlotWaitTimeout,
)
from scrapy_cdp_pool.profiles.browser import (
    endpoint_for,
    on_dedicated_server,
    playwright_page,
    run_hook,
)
from scrapy_cdp_pool.profiles.health import REFUSED_STATUSES
from scrapy_cdp_pool.profiles.options import (
    context_options,
    describe_requirements,
    playwright_context_args,
)
from scrapy_cdp_pool.profiles.registry import ProfileRegistry, profiles_of
from scrapy_cdp_pool.profiles.store import ProfileStore
from scrapy_cdp_pool.settings.signed_out import SignedOutRule

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

SIGN_IN_RETRY_META_KEY = "_cdp_profile_signed_in"
SPIDER_HOOK = "cdp_sign_in"


class ProfileMiddleware:
    """Downloader middleware for ``meta["cdp_profile"]`` (installed by
    :class:`~scrapy_cdp_pool.Addon`; disabled without ``CDP_POOL_PROFILES_DIR``)."""

    def __init__(
        self, runtime: CrawlerRuntime, profiles: ProfileRegistry, gates: RequestGates
    ) -> None:
        if profiles.store is None:
            raise NotConfigured  # no profiles: nothing to say on every crawl
        self.runtime = runtime
        crawler = self.crawler = runtime.crawler
        self.profiles = profiles
        self.store: ProfileStore = profiles.store
        self.health = profiles.health
        self.gates = gates
        self._valid: list[str] = []
        self._routing_reported = False
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        return cls(runtime, profiles_of(runtime), runtime.gates)

    # Start-up ------------------------------------------------------------

    def spider_opened(self) -> None:
        """Validate every profile file, log each problem once, and say which
        profiles the embedded server cannot honour."""
        errors = self.store.check()
        for error in errors:
            self.profiles.report(error, "Invalid profile %r: %s")
        bad = {error.name for error in errors}
        self._valid = [name for name in self.store.names() if name not in bad]
        logger.info(
            "%d valid profile(s) in %s%s",
            len(self._valid),
            self.store.directory,
            f", {len(errors)} with problems" if errors else "",
            extra={"crawler": self.crawler},
        )
        config = self.profiles.config
        if config.endpoints:
            return  # known once the pool has asked them (see _report_routing)
        backend = self.runtime.backend
        dedicated = backend.dedicated_servers and config.dedicated_servers > 0
        for name, needs in self._requirements():
            missing = backend.missing(needs)
            if missing and dedicated and missing <= SERVER_LEVEL:
                logger.info(
                    "Profile %r needs %s: its requests go to a dedicated Lightpanda server "
                    "started with them (CDP_POOL_DEDICATED_SERVERS)",
                    name,
                    describe_requirements(missing),
                    extra={"crawler": self.crawler},
                )
            elif missing and missing <= SERVER_LEVEL and backend.dedicated_servers:
                logger.warning(
                    "Profile %r needs %s, which the embedded lightpanda server takes only on a "
                    "dedicated server, and CDP_POOL_DEDICATED_SERVERS = 0: its requests will fail",
                    name,
                    describe_requirements(missing),
                    extra={"crawler": self.crawler},
                )
            elif missing:
                logger.warning(
                    "Profile %r needs %s, which the embedded %s server does not honour: its "
                    "requests will fail (list an endpoint that does, e.g. Chromium, in "
                    "CDP_POOL_ENDPOINTS)",
                    name,
                    describe_requirements(missing),
                    config.browser,
                    extra={"crawler": self.crawler},
                )

    def _requirements(self) -> list[tuple[str, frozenset[str]]]:
        needs = []
        for name in self._valid:
            try:
                requirements = context_options(self.store.load(name)).requirements()
            except ProfileFileError:
                continue
            if requirements:
                needs.append((name, requirements))
        return needs

    def _report_routing(self) -> None:
        """Once the pool knows its endpoints: where each demanding profile goes."""
        pool = self.runtime.pool
        if not self.profiles.config.endpoints or pool is None:
            return
        if pool.state is not PoolState.READY:
            return
        self._routing_reported = True
        for name, needs in self._requirements():
            able = [i.label for i in pool.infos if i is not None and not needs & i.unsupported]
            if able:
                logger.info(
                    "Profile %r needs %s: its requests go to %s only",
                    name,
                    describe_requirements(needs),
                    ", ".join(sorted(set(able))),
                    extra={"crawler": self.crawler},
                )
            else:
                logger.warning(
                    "Profile %r needs %s, which no endpoint honours: its requests will fail",
                    name,
                    describe_requirements(needs),
                    extra={"crawler": self.crawler},
                )

    # Requests ------------------------------------------------------------

    def process_request(self, request: Request) -> None:
        name = profile_of(request)
        if not name:
            return
        if not self._routing_reported:
            self._report_routing()
        if request.meta.get("cdp") is False:
            raise self.profiles.fail_fast(
                ProfileError(
                    name,
                    "meta['cdp'] is False, but a profile's requests are "
                    "always rendered in the profile's browser context",
                )
            )
        self.profiles.profile(name)  # raises ProfileError: retired, bad files
        # The profile's cookies only: Scrapy's jar neither adds to them nor
        # keeps what this profile's responses set.
        request.meta["dont_merge_cookies"] = True
        request.headers.pop(b"Cookie", None)

    async def process_response(self, request: Request, response: Response) -> Response | Request:
        name = profile_of(request)
        if not name:
            return response
        rule = self._rule(name)
        if rule is not None and rule.matches(response):
            return await self._on_signed_out(request, response, name, rule)
        if response.status in REFUSED_STATUSES:
            self._failed(name, f"HTTP {response.status}")
        else:
            self.health.succeeded(name)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        name = profile_of(request)
        # A request that never got a page (SlotWaitTimeout, PoolStartTimeout) says nothing of
        # the profile.
        if name and not isinstance(exception, (ProfileError, SlotWaitTimeout, PoolStartTimeout)):
            self._failed(name, type(exception).__name__)

    def _failed(self, name: str, why: str) -> None:
        reason = self.health.failed(name, why)
        if reason is not None:
            logger.warning("Profile %r %s", name, reason, extra={"crawler": self.crawler})

    def _rule(self, name: str) -> SignedOutRule | None:
        try:
            rule = self.store.load(name).signed_out
        except ProfileFileError:
            rule = None
        return rule or self.profiles.config.profiles.signed_out

    # Signed out ----------------------------------------------------------

    async def _on_signed_out(
        self, request: Request, response: Response, name: str, rule: SignedOutRule
    ) -> Request:
        self.health.inc(name, "signed_out")
        logger.info(
            "Profile %r is signed out at %s (%s)",
            name,
            response.url,
            rule.describe(),
            extra={"crawler": self.crawler},
        )
        hook = self._hook()
        if hook is None:
            self._give_up(
                request,
                name,
                "profile signed out; no sign-in hook "
                f"(CDP_POOL_SIGN_IN or the spider's {SPIDER_HOOK})",
            )
        if request.meta.get(SIGN_IN_RETRY_META_KEY):
            self._give_up(request, name, "profile signed out; still signed out after signing in")
        try:
            await self._sign_in(name, hook)
        except Exception as e:
            logger.exception("Signing in profile %r failed", name, extra={"crawler": self.crawler})
            self._give_up(request, name, f"profile signed out; signing in failed ({e!r})", e)
        self.gates.on_finished(request)
        retry = request.replace(dont_filter=True)
        retry.meta[SIGN_IN_RETRY_META_KEY] = True
        return retry

    def _give_up(
        self, request: Request, name: str, reason: str, cause: BaseException | None = None
    ) -> NoReturn:
        reason = self.health.retire(name, reason)
        self.gates.on_finished(request)  # raising here skips the release middleware
        error = ProfileSignedOut(name, reason)
        self.profiles.report(error, "Failing the requests of profile %r: %s")
        raise error from cause

    def _hook(self) -> Callable[..., Any] | None:
        spider_hook = getattr(self.crawler.spider, SPIDER_HOOK, None)
        if callable(spider_hook):
            return spider_hook  # type: ignore[no-any-return]
        hook = self.profiles.config.profiles.sign_in
        if isinstance(hook, str):
            loaded: Callable[..., Any] = load_object(hook)
            return loaded
        return hook

    async def _sign_in(self, name: str, hook: Callable[..., Any]) -> None:
        """Run ``hook(profile, page)`` in a Playwright page on an endpoint
        that honours the profile, then save the context's storage state."""
        profile = self.store.load(name)
        pool = self.runtime.pool
        if pool is None:
            raise PoolUnavailable("the CDP pool is not running")
        options = context_options(profile)
        requires, server_options = options.requirements(), options.server_options(proxy=True)
        timeout_s = self.profiles.config.download_timeout_s
        await pool.start()  # its endpoints' kinds decide (on_dedicated_server)
        args = playwright_context_args(
            profile, dedicated=on_dedicated_server(pool, requires, server_options)
        )
        async with (
            asyncio.timeout(timeout_s),
            endpoint_for(pool, requires, server_options) as endpoint,
            playwright_page(endpoint, args, timeout_s, pool.config) as (context, page),
        ):
            await run_hook(hook, profile, page)
            state = await context.storage_state()
        path = await asyncio.to_thread(self.store.save_state, name, dict(state))
        self.health.inc(name, "sign_ins")
        logger.info(
            "Profile %r signed in; its storage state is saved to %s",
            name,
            path,
            extra={"crawler": self.crawler},
        )
