"""One request up the ladder: its rungs tried from the kind's learned start
until the response meets the request's expectation.

The rungs, cheapest first: ``"http"`` (``CDP_POOL_RENDER = "auto"``: the
handler's fallback, Scrapy's own HTTP handler), the pool's browser
(``"lightpanda"``; ``"chromium"`` with ``CDP_POOL_BROWSER = "chromium"``;
``"endpoints"`` with ``CDP_POOL_ENDPOINTS``), then ``"chromium"``
(``CDP_POOL_FALLBACK = "chromium"``). A rung is climbed past when its
response does not meet the expectation ("incomplete") or it fails in a way a
fuller browser may fix (:data:`FIXABLE`); any other failure ends the request
as it does without the ladder. All rungs share the request's
``download_timeout``: each is given what is left of it.

A response handed back to Scrapy's ``RedirectMiddleware`` (a 3xx with
``Location``) is returned unchecked: the request it leads to is checked.
Plain HTTP is skipped for a request the browser must serve: one with a
profile (its session lives in the browser), actions or a network capture.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import DownloadTimeoutError
from scrapy.http import Response

from scrapy_cdp_pool.errors import (
    ActionError,
    ActionTimeout,
    ActionUnsupported,
    CDPBacklogExceeded,
    CDPConnectionClosed,
    CDPMalformedMessage,
    CDPMessageTooLarge,
    CDPRequestTooLarge,
    ExpectationNotMet,
    PageCrashed,
    PageMemoryExceeded,
    PageScriptError,
    RungResult,
)
from scrapy_cdp_pool.ladder.chromium import ChromiumRung
from scrapy_cdp_pool.ladder.kind import page_kind
from scrapy_cdp_pool.ladder.learner import Learner
from scrapy_cdp_pool.ladder.plain import decoded
from scrapy_cdp_pool.ladder.store import LadderStore
from scrapy_cdp_pool.messages import cap_message
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.settings.expectation import Expectation, parse_expectation
from scrapy_cdp_pool.shared.disk_full import is_disk_full, stop_for_full_disk

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.core.parts import RenderFetches

logger = logging.getLogger(__name__)

HTTP = "http"
CHROMIUM_RUNG = "chromium"
#: failures of a lighter browser a fuller one may not have: the page crashed
#: or its target closed, a page script error, an action that failed, timed out
#: (an element waited for that the lighter browser never rendered) or that
#: the backend cannot do
FIXABLE: tuple[type[BaseException], ...] = (
    PageCrashed,
    CDPConnectionClosed,
    PageScriptError,
    ActionError,
    ActionTimeout,
    ActionUnsupported,
)
#: ... but not these: a crash past the page heap ceiling (the same scripts
#: would allocate as much on Chromium), messages too large or malformed, a
#: flooding server (not the page's doing)
NOT_FIXABLE: tuple[type[BaseException], ...] = (
    PageMemoryExceeded,
    CDPMessageTooLarge,
    CDPRequestTooLarge,
    CDPMalformedMessage,
    CDPBacklogExceeded,
)

#: what a climb sets in ``request.meta`` besides ``cdp_page_kind``
RESULT_KEYS = ("cdp_rung", "cdp_ladder", "cdp_fallback_reason")

#: ``fetch(request, seconds left) -> response``: one rung
Fetch = Callable[[Request, float], Awaitable[Response]]


def fixable(error: BaseException) -> BaseException | None:
    """The failure a fuller browser may fix behind ``error`` (the handler
    raises Scrapy's exceptions ``from`` the render's own), or ``None``."""
    for candidate in (error, error.__cause__):
        if isinstance(candidate, NOT_FIXABLE):
            return None
        if isinstance(candidate, FIXABLE):
            return candidate
    return None


def is_handed_back(response: Response) -> bool:
    """A redirect left to Scrapy's ``RedirectMiddleware``."""
    return 300 <= response.status < 400 and b"Location" in response.headers


def rung_names(config: PoolConfig) -> tuple[str, ...]:
    """The ladder's rungs, cheapest first (``CDP_POOL_BROWSER`` names the
    pool's own rung; ``"endpoints"`` with ``CDP_POOL_ENDPOINTS``)."""
    rungs = [HTTP] if config.ladder.mode == "auto" else []
    rungs.append("endpoints" if config.endpoints else config.browser)
    if config.ladder.fallback == CHROMIUM_RUNG:
        rungs.append(CHROMIUM_RUNG)
    return tuple(rungs)


class Ladder:
    """The crawler's ladder (made by the runtime, held by its http and https
    download handlers): its rungs, the fallback rung's pool (:attr:`chromium`),
    what it learned, its stats.

    ``store``: where the learned state is loaded from and saved to (``None``:
    kept in memory).

    :raises ValueError: the store's saved state is not one (names the file).
    """

    def __init__(
        self,
        crawler: Crawler,
        config: PoolConfig,
        store: LadderStore | None,
        chromium: ChromiumRung,
    ) -> None:
        self.crawler = crawler
        self.config = config
        self.rungs = rungs = rung_names(config)
        self.stats = crawler.stats
        self.store = store
        self.chromium = chromium
        self._holders = 0
        learned = store.load() if store is not None else {}
        self.learner = Learner(rungs, config.ladder.recheck_fraction, learned, self._on_change)
        for kind, state in self.learner.kinds.items():
            self.stats.set_value(f"cdp_pool/ladder/learned/{kind}", state.start)
        if len(rungs) > 1 or config.ladder.expect is not None:
            logger.info(
                "Render ladder: rungs %s, for rendered requests with an expectation (%s)",
                ", ".join(rungs),
                f"CDP_POOL_EXPECT = {config.ladder.expect.describe()}, or meta['cdp_expect']"
                if config.ladder.expect is not None
                else "CDP_POOL_EXPECT is unset: only those with meta['cdp_expect']",
                extra={"crawler": crawler},
            )
        if learned:
            logger.info(
                "Render ladder: %d kind(s) of page learned in an earlier run: %s",
                len(learned),
                "; ".join(f"{k} -> {s.start}" for k, s in sorted(self.learner.kinds.items())),
                extra={"crawler": crawler},
            )

    def expectation_for(self, request: Request) -> Expectation | None:
        """``meta["cdp_expect"]`` (``None`` there: no expectation), else
        ``CDP_POOL_EXPECT``.

        :raises ValueError: naming the request and the meta key.
        """
        if "cdp_expect" not in request.meta:
            return self.config.ladder.expect
        value = request.meta["cdp_expect"]
        if value is None:
            return None
        return parse_expectation(value, f"{request}: meta['cdp_expect']")

    async def climb(
        self,
        request: Request,
        expectation: Expectation,
        fetch: Mapping[str, Fetch],
        timeout_s: float,
    ) -> Response:
        """The first response, from the kind's start up, that meets
        ``expectation``; ``fetch`` maps each rung name to how to fetch on it.

        Sets ``request.meta["cdp_rung"]`` (the rung that served it),
        ``["cdp_ladder"]`` (each rung tried: ``{"rung", "outcome",
        "seconds"}``), ``["cdp_page_kind"]`` and, when it climbed,
        ``["cdp_fallback_reason"]`` (the last rung's outcome below it).

        :raises ExpectationNotMet: met on no rung.
        :raises DownloadTimeoutError: ``timeout_s`` ran out between rungs.
        :raises Exception: a rung's failure that a fuller browser cannot fix,
            or the last rung's, as the handler raises it without the ladder.
        """
        kind = page_kind(request)
        lowest = 1 if self.rungs[0] == HTTP and not _http_may_serve(request) else 0
        began, recheck = self.learner.plan(kind, lowest)
        if recheck:
            self.stats.inc_value("cdp_pool/ladder/rechecks")
        deadline = time.monotonic() + timeout_s
        results: list[RungResult] = []
        meta = request.meta
        meta["cdp_page_kind"] = kind
        for key in RESULT_KEYS:  # an earlier attempt's (a retry or redirect copies meta)
            meta.pop(key, None)
        for index in range(began, len(self.rungs)):
            rung = self.rungs[index]
            left = deadline - time.monotonic()
            if left <= 0:
                self._record(meta, results)
                tried = ", ".join(r.rung for r in results)
                raise DownloadTimeoutError(
                    f"{request}: download_timeout = {timeout_s:g} s, shared by the render "
                    f"ladder's rungs, ran out before {rung} (after {tried})"
                )
            self.stats.inc_value(f"cdp_pool/ladder/tries/{rung}")
            started = time.monotonic()
            try:
                response = await fetch[rung](request, left)
            except Exception as e:
                cause = fixable(e)
                outcome = f"{type(cause or e).__name__}: {cap_message(cause or e, 300)}"
                results.append(RungResult(rung, outcome, time.monotonic() - started))
                if cause is None or index == len(self.rungs) - 1:
                    self._record(meta, results)
                    named = _timeout_named(e, cause, request, results, timeout_s, left)
                    if named is None:
                        raise
                    raise named from e
                self.stats.inc_value(f"cdp_pool/ladder/climbed/{type(cause).__name__}")
                continue
            seconds = time.monotonic() - started
            if is_handed_back(response):
                results.append(RungResult(rung, "redirect (not checked)", seconds))
                self._record(meta, results)
                return response
            missing = expectation.unmet(response)
            if missing is None:
                results.append(RungResult(rung, "met", seconds))
                self._served(meta, results, kind, (began, index), recheck)
                return response
            results.append(RungResult(rung, f"incomplete: {missing}", seconds))
            if index < len(self.rungs) - 1:
                self.stats.inc_value("cdp_pool/ladder/climbed/incomplete")
        self._record(meta, results)
        self.learner.record(kind, began, None, recheck)
        self.stats.inc_value("cdp_pool/ladder/not_met")
        self.stats.inc_value(f"cdp_pool/ladder/not_met/{kind}")
        raise ExpectationNotMet(str(request), kind, results)

    def _served(
        self,
        meta: dict[str, Any],
        results: list[RungResult],
        kind: str,
        rungs: tuple[int, int],
        recheck: bool,
    ) -> None:
        """The last rung of ``results`` met the expectation: recorded in
        ``meta``, counted, learned (``rungs``: the rung it began on, the one
        that served)."""
        began, index = rungs
        rung = results[-1].rung
        self._record(meta, results)
        meta["cdp_rung"] = rung
        if len(results) > 1:
            meta["cdp_fallback_reason"] = f"{results[-2].rung}: {results[-2].outcome}"
        self.stats.inc_value(f"cdp_pool/ladder/served/{rung}")
        if recheck and index == began:
            self.stats.inc_value("cdp_pool/ladder/rechecks_met")
        self.learner.record(kind, began, index, recheck)

    @staticmethod
    def _record(meta: dict[str, Any], results: list[RungResult]) -> None:
        meta["cdp_ladder"] = [r.as_dict() for r in results]

    def _on_change(self, kind: str, old: str | None, new: str, why: str) -> None:
        self.stats.inc_value("cdp_pool/ladder/changes")
        self.stats.set_value(f"cdp_pool/ladder/learned/{kind}", new)
        logger.info(
            "Render ladder: %s now starts on %s (was %s: %s)", kind, new, old or "unknown", why,
            extra={"crawler": self.crawler},
        )  # fmt: skip
        self.save()

    async def fetch(
        self,
        request: Request,
        expectation: Expectation,
        fetches: RenderFetches,
        timeout_s: float,
    ) -> Response:
        """:meth:`climb` with each rung fetched through ``fetches`` (the
        download handler): plain HTTP (decoded for the check), a render on
        the crawl's pool, or on the fallback rung's Chromium pool."""

        async def plain(request: Request, left_s: float) -> Response:
            within = request.replace(meta={**request.meta, "download_timeout": left_s})
            return decoded(self.crawler, request, await fetches.plain(within, left_s))

        async def primary(request: Request, left_s: float) -> Response:
            return await fetches.render(request, fetches.pool, left_s)

        async def chromium(request: Request, left_s: float) -> Response:
            return await fetches.render(request, await self.chromium.pool(), left_s)

        rungs: dict[str, Fetch] = {name: primary for name in self.rungs}
        rungs[HTTP] = plain
        if self.config.ladder.fallback == CHROMIUM_RUNG:
            rungs[CHROMIUM_RUNG] = chromium
        return await self.climb(request, expectation, rungs, timeout_s)

    def hold(self) -> Ladder:
        """Taken by a download handler; :meth:`release` at its close."""
        self._holders += 1
        return self

    async def release(self) -> None:
        """The last holder saves what was learned and gives the Chromium
        pool back."""
        self._holders -= 1
        if self._holders > 0:
            return
        self.save()
        await self.chromium.close()

    def save(self) -> None:
        """Save what was learned to the store (each change, and at the end).
        A full disk stops the crawl (shared/disk_full.py), not the request."""
        if self.store is not None:
            try:
                self.store.save(self.learner.snapshot())
            except OSError as e:
                if not is_disk_full(e):
                    raise
                where = getattr(self.store, "path", "the render ladder's store")
                stop_for_full_disk(self.crawler, where, "the render ladder's state", e)


def _http_may_serve(request: Request) -> bool:
    """Whether plain HTTP may serve ``request``: not when it has a profile,
    actions or a network capture, which only a browser gives."""
    meta = request.meta
    return not (meta.get("cdp_profile") or meta.get("cdp_actions") or meta.get("cdp_capture"))


def _timeout_named(
    error: Exception,
    cause: BaseException | None,
    request: Request,
    results: list[RungResult],
    timeout_s: float,
    left: float,
) -> Exception | None:
    """The last rung's ``DownloadTimeoutError`` named for the ladder (the
    action's own timeout on every rung, or the deadline the rungs shared),
    ``None`` to raise ``error`` as it is."""
    if not isinstance(error, DownloadTimeoutError):
        return None
    if isinstance(cause, ActionTimeout):
        # the action's own timeout on every rung, not download_timeout
        tried = ", ".join(r.rung for r in results)
        return type(error)(f"{error} (on every rung of the render ladder: {tried})")
    if len(results) > 1:
        tried = ", ".join(r.rung for r in results[:-1])
        # the same class (a SlotWaitTimeout stays one), the whole deadline stated
        return type(error)(
            f"{request}: download_timeout = {timeout_s:g} s, shared by the render "
            f"ladder's rungs, ran out on {results[-1].rung} ({left:.3g} s left after {tried})"
        )
    return None
