"""ProfileRegistry: the crawl's stored profiles and their health, one object per
crawler (:func:`profiles_of`, kept on the crawler's runtime), shared by the
download handlers (as :class:`~scrapy_cdp_pool.core.parts.ProfileContexts`)
and :class:`ProfileMiddleware`.

The handler asks :meth:`ProfileRegistry.context_for` what browser context a request
needs and gives back the context's storage state with :meth:`save_state`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy import Request

from scrapy_cdp_pool.core.gates import profile_of
from scrapy_cdp_pool.core.parts import PROFILE_CONTEXTS, PartKey
from scrapy_cdp_pool.errors import (
    ProfileError,
    ProfileFileError,
    ProfileRetired,
    ProfileUnsupported,
)
from scrapy_cdp_pool.profiles.health import HealthBook
from scrapy_cdp_pool.profiles.options import context_options
from scrapy_cdp_pool.profiles.store import Profile, ProfileStore
from scrapy_cdp_pool.render import ContextOptions
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.settings.signed_out import SignedOutRule
from scrapy_cdp_pool.shared.disk_full import is_disk_full, stop_for_full_disk

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.core.runtime import CrawlerRuntime

logger = logging.getLogger(__name__)

E = TypeVar("E", bound=ProfileError)


class ProfileRegistry:
    """Profiles of ``CDP_POOL_PROFILES_DIR`` for one crawl."""

    def __init__(self, crawler: Crawler, config: PoolConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.store = ProfileStore(config.profiles.dir) if config.profiles.dir else None
        self.health = HealthBook(crawler.stats, config.profiles.max_failures)
        self._reported: set[tuple[str, str]] = set()

    def profile(self, name: str) -> Profile:
        """Profile ``name``, if it may be used now.

        :raises ProfileError: it is retired, its files are missing or invalid,
            or no profile directory is set.
        """
        retired = self.health.retired(name)
        if retired is not None:
            raise self.fail_fast(ProfileRetired(name, retired))
        if self.store is None:
            raise self.fail_fast(ProfileError(name, "CDP_POOL_PROFILES_DIR is not set"))
        try:
            return self.store.load(name)
        except ProfileFileError as e:
            raise self.fail_fast(e) from None

    def context_for(self, request: Request) -> ContextOptions | None:
        """The browser context ``request`` needs: its profile's, or ``None``
        when it names none. Counts a use of the profile.

        :raises ProfileError: see :meth:`profile`.
        """
        name = profile_of(request)
        if not name:
            return None
        profile = self.profile(name)
        self.health.used(name)
        return context_options(profile, save_state=self.config.profiles.save_state)

    def signed_out_rule(self, request: Request) -> SignedOutRule | None:
        """The signed-out rule of ``request``'s profile (its own, else
        ``CDP_POOL_SIGNED_OUT``), ``None`` without a profile or a rule."""
        name = profile_of(request)
        if not name:
            return None
        rule = None
        if self.store is not None:
            try:
                rule = self.store.load(name).signed_out
            except ProfileFileError:
                rule = None
        return rule or self.config.profiles.signed_out

    async def save_state(self, request: Request, state: dict[str, Any]) -> None:
        """Write ``state`` back to the request's profile (atomically). A
        failure is logged (once per problem) and counted, not raised: the
        response is good."""
        name = profile_of(request)
        if not name or self.store is None:
            return
        try:
            await asyncio.to_thread(self.store.save_state, name, state)
        except ProfileFileError as e:
            self.health.inc(name, "save_errors")
            if is_disk_full(e):  # the response is good; the crawl stops cleanly
                stop_for_full_disk(self.crawler, e.path, f"profile {name!r}'s storage state", e)
                return
            self.report(e, "Cannot save the storage state of profile %r: %s")
            return
        self.health.inc(name, "state_saves")

    def unsupported(self, request: Request, error: Exception) -> ProfileUnsupported:
        """The error for a request whose profile no endpoint can honour
        (``error``: the pool's ``CapabilityUnavailable``); the profile is
        retired, so its other requests fail at once with the same reason."""
        name = profile_of(request)
        reason = self.health.retire(
            name,
            f"{error}; its requests fail (list an endpoint that honours it, e.g. "
            "Chromium, in CDP_POOL_ENDPOINTS)",
        )
        return self.fail_fast(ProfileUnsupported(name, reason))

    def fail_fast(self, error: E) -> E:
        """Count a request failed without being sent, log its reason once."""
        self.health.inc(error.name, "failed_fast")
        self.report(error, "Failing the requests of profile %r: %s")
        return error

    def report(self, error: ProfileError, message: str) -> None:
        key = (error.name, str(error))
        if key not in self._reported:
            self._reported.add(key)
            logger.warning(message, error.name, error.reason, extra={"crawler": self.crawler})


_PROFILE_REGISTRY: PartKey[ProfileRegistry] = PartKey("stored profiles")


def profiles_of(runtime: CrawlerRuntime) -> ProfileRegistry:
    """The crawl's :class:`ProfileRegistry`, made on first use (they count in the
    crawler's stats, which Scrapy makes after the add-ons)."""
    return runtime.part(_PROFILE_REGISTRY, lambda: ProfileRegistry(runtime.crawler, runtime.config))


def provide_profiles(runtime: CrawlerRuntime) -> None:
    """Register the crawl's :class:`ProfileRegistry` as the profile contexts the
    download handler asks for (called by the add-on)."""
    runtime.provide(PROFILE_CONTEXTS, lambda: profiles_of(runtime))
