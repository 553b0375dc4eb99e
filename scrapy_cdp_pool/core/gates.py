"""RequestGates: may a request start now? One object per crawler.

A request's gate key is its profile (``meta["cdp_profile"]``, empty for none)
and its host. The profile gate is closed while another request of that
profile is in flight. Host gates (per-host concurrency; the host pacing's
pauses after 429/``Retry-After`` and host rate,
:class:`~scrapy_cdp_pool.core.pacing.HostPacing`) plug in through
:meth:`add_host_check`, and see requests start and end through
:meth:`add_dequeue_hook` and :meth:`add_finish_hook`. A
request whose ``meta["cdp_not_before"]`` (epoch seconds) is in the future has a
gate of its own, closed until then (retry backoff). An invalid value
(:func:`not_before_problem`) never holds a request back: the queue marks the
request (:data:`INVALID_META_KEY`), hands it out at once, and
:class:`~scrapy_cdp_pool.resilience.RequestChecksMiddleware` fails it by name.

Requests are marked in flight when the scheduler hands them out
(:meth:`on_dequeued`) and released when the download is over, whatever its
outcome (:meth:`on_finished`, called by :class:`GateReleaseMiddleware`). When a
gate opens, the engine is asked to pull from the scheduler again.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.utils.asyncio import call_later
from scrapy.utils.httpobj import urlparse_cached

from scrapy_cdp_pool.core.profile_locks import LocalProfileLocks, ProfileLocks
from scrapy_cdp_pool.scrapy_internals import wake_engine

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

PROFILE_META_KEY = "cdp_profile"
NOT_BEFORE_META_KEY = "cdp_not_before"
_TOKEN_META_KEY = "_cdp_gate_token"  # noqa: S105 - a meta key, not a secret
INVALID_META_KEY = "_cdp_invalid_not_before"
"""Set by the scheduler queue on a request whose ``meta["cdp_not_before"]`` is
invalid, with why (:func:`not_before_problem`); such a request is handed out
at once and fails by name before it is downloaded."""
NOT_BEFORE_SLACK_S = 1.0
"""Seconds a ``cdp_not_before`` may lie past ``now + CDP_POOL_RETRY_BACKOFF_MAX_SECONDS``
(the longest wait the retry policy sets): float rounding of epoch times and a
little clock skew between processes sharing a queue."""

HostCheck = Callable[[str], bool]
"""``check(host) -> bool``: whether a request to ``host`` may start now."""
DequeueHook = Callable[[Request, float], None]
"""``hook(request, now)``: ``request`` was handed out at ``time.monotonic()`` ``now``."""
FinishHook = Callable[[Request], None]
LaunchCheck = Callable[[Request], None]
"""``check(request)``, right before ``request`` leaves for the browser (its
navigation) or the download: raises (an ``IgnoreRequest``) to drop it."""
StartCheck = Callable[[], bool]
"""``check() -> bool``: whether the crawler may take any request from its
scheduler now (a shared concurrency budget)."""


def profile_of(request: Request) -> str:
    """The request's profile name, ``""`` for none."""
    value = request.meta.get(PROFILE_META_KEY)
    return str(value) if value else ""


def host_of(request: Request) -> str:
    return urlparse_cached(request).hostname or ""


def url_host(url: str) -> str:
    """The host name of ``url``, ``""`` for none."""
    return urlsplit(url).hostname or ""


def _finite(value: object) -> float | None:
    """``value`` as a float when it is a finite number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def not_before_problem(value: object, max_wait_s: float, now: float | None = None) -> str | None:
    """Why ``value`` cannot be a ``meta["cdp_not_before"]``; ``None`` when it
    can (``None``, unset, included).

    A valid value is epoch seconds: a finite number (not a bool), not
    negative, and at most ``max_wait_s`` (``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS``,
    the longest wait the retry policy sets) plus :data:`NOT_BEFORE_SLACK_S`
    seconds after ``now`` (default ``time.time()``).
    """
    if value is None:
        return None
    number = _finite(value)
    if number is None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return "expected epoch seconds, a finite number"
        return "expected epoch seconds (a number)"
    if number < 0:
        return "expected epoch seconds, not a negative number"
    ahead_s = number - (time.time() if now is None else now)
    if ahead_s > max_wait_s + NOT_BEFORE_SLACK_S:
        return (
            f"that is {ahead_s:.0f} s from now, more than "
            f"CDP_POOL_RETRY_BACKOFF_MAX_SECONDS = {max_wait_s:g} s "
            "(epoch seconds are expected, not milliseconds)"
        )
    return None


def not_before_suffix(value: object) -> str:
    """``"|@<epoch seconds>"`` (rounded up to 0.1 s, never early) for a finite
    number ``value``, else ``""``: the part of a gate key that holds a request
    back until then."""
    number = _finite(value)
    return f"|@{math.ceil(number * 10) / 10:.1f}" if number is not None else ""


def gate_key(request: Request) -> str:
    """``"<profile>|<host>"``: requests with the same key share a gate. A
    request not to start before a future time gets ``"|@<epoch seconds>"``
    added (:func:`not_before_suffix`), unless the queue marked its value
    invalid (:data:`INVALID_META_KEY`)."""
    key = f"{profile_of(request)}|{host_of(request)}"
    if INVALID_META_KEY not in request.meta:
        not_before = _finite(request.meta.get(NOT_BEFORE_META_KEY))
        if not_before is not None and not_before > time.time():
            key += not_before_suffix(not_before)
    return key


def split_key(key: str) -> tuple[str, str]:
    profile, _, host = key.partition("|")
    return profile, host.partition("|@")[0]


def not_before_of(key: str) -> float | None:
    """The epoch time before which gate ``key`` stays closed, if any."""
    _, marker, when = key.rpartition("|@")
    try:
        return _finite(float(when)) if marker else None
    except ValueError:  # "|@" in a profile name, not a time
        return None


class RequestGates:
    """The crawler's gates; one per crawler, held by its
    :class:`~scrapy_cdp_pool.core.runtime.CrawlerRuntime` (``runtime.gates``).

    ``max_wait_s``: ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS``.
    """

    def __init__(
        self, crawler: Crawler, locks: ProfileLocks | None = None, *, max_wait_s: float = 60.0
    ) -> None:
        self.crawler = crawler
        self.locks: ProfileLocks = locks or LocalProfileLocks()
        self._host_checks: list[HostCheck] = []
        self._dequeue_hooks: list[DequeueHook] = []
        self._finish_hooks: list[FinishHook] = []
        self._start_checks: list[StartCheck] = []
        self._launch_checks: list[LaunchCheck] = []
        self._leaving_checks: list[LaunchCheck] = []
        self._wakes: dict[float, Any] = {}
        #: ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS``: the latest a valid
        #: ``cdp_not_before`` may be, from now (:func:`not_before_problem`)
        self.max_wait_s = max_wait_s

    def add_host_check(self, check: HostCheck) -> None:
        self._host_checks.append(check)

    def add_dequeue_hook(self, hook: DequeueHook) -> None:
        self._dequeue_hooks.append(hook)

    def add_finish_hook(self, hook: FinishHook) -> None:
        self._finish_hooks.append(hook)

    def add_launch_check(self, check: LaunchCheck) -> None:
        self._launch_checks.append(check)

    @property
    def has_launch_checks(self) -> bool:
        return bool(self._launch_checks)

    def check_launch(self, request: Request) -> None:
        """Right before ``request`` leaves for the browser or the download
        (no await between this and the start): the launch checks (a cluster
        worker's lease). :raises IgnoreRequest: drop the request."""
        for check in self._launch_checks:
            check(request)

    def add_leaving_check(self, check: LaunchCheck) -> None:
        """``check(request)`` is also asked where a rendered request's
        navigation leaves the browser for the site (see
        :meth:`check_leaving`); it must not block (no Redis call)."""
        self._leaving_checks.append(check)

    @property
    def has_leaving_checks(self) -> bool:
        return bool(self._leaving_checks)

    def check_leaving(self, request: Request) -> None:
        """Where ``request``'s navigation (or a redirect of it) leaves the
        browser for the site: paused in the browser's request interception, it
        may have waited there since :meth:`check_launch` (a stalled worker).
        :raises IgnoreRequest: drop the request."""
        for check in self._leaving_checks:
            check(request)

    def add_start_check(self, check: StartCheck) -> None:
        self._start_checks.append(check)

    def may_start(self) -> bool:
        """Crawler-level checks, asked once a request could be handed out:
        whether the crawler may take it now. A check that says no wakes the
        engine itself when it would say yes."""
        return all(check() for check in self._start_checks)

    def is_open(self, key: str) -> bool:
        """Whether the head request of gate ``key`` may start now."""
        not_before = not_before_of(key)
        if not_before is not None:
            remaining = not_before - time.time()  # epoch: meta outlives the process
            # Further than any valid wait (a queue stored before values were
            # checked): open, the request fails by name once handed out.
            if 0 < remaining <= self.max_wait_s + NOT_BEFORE_SLACK_S:
                self.wake(remaining)
                return False
        profile, host = split_key(key)
        if profile and self.locks.is_busy(profile):
            return False
        return all(check(host) for check in self._host_checks)

    def on_dequeued(self, request: Request) -> bool:
        """The scheduler is handing ``request`` out: mark its profile in
        flight and run the dequeue hooks (host limits).

        Returns ``False``, and marks nothing, when the profile lock could not
        be taken (a shared lock taken meanwhile by another process): the queue
        then keeps the request. The token (unique across processes) stays in
        the request's meta until :meth:`on_finished`."""
        profile = profile_of(request)
        if profile:
            token = f"{uuid.uuid4().hex}"
            if not self.locks.try_acquire(profile, token):
                logger.debug("Identity %r is busy elsewhere; %s waits", profile, request)
                return False
            request.meta[_TOKEN_META_KEY] = token
        self.run_dequeue_hooks(request)
        return True

    def run_dequeue_hooks(self, request: Request) -> None:
        """Tell the dequeue hooks (host limits, budgets) that ``request`` is
        handed out now; for a scheduler whose profile lock was taken
        elsewhere (the cluster's take)."""
        now = time.monotonic()
        for hook in self._dequeue_hooks:
            hook(request, now)

    def on_finished(self, request: Request) -> None:
        """The download of ``request`` is over: release its profile and ask
        the engine to look at the queue again."""
        for hook in self._finish_hooks:
            hook(request)
        profile = profile_of(request)
        token = request.meta.pop(_TOKEN_META_KEY, None)
        released = profile and token is not None and self.locks.release(profile, token)
        if released or self._finish_hooks:
            self.wake()

    def wake(self, delay_s: float = 0.0) -> None:
        """Ask the engine to pull from the scheduler (now or in ``delay_s``
        seconds): a gate opened. Uses the engine's own scheduling loop; a
        delayed wake has its own timer (one per due time), as the engine's
        ``nextcall`` ignores new calls while one is pending."""
        if delay_s > 0:
            due = round(time.monotonic() + delay_s, 3)
            if due not in self._wakes:
                self._wakes[due] = call_later(delay_s, self._timed_wake, due)
            return
        wake_engine(self.crawler)

    def _timed_wake(self, due: float) -> None:
        self._wakes.pop(due, None)
        self.wake()
