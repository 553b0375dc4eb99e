"""HostGate: the one place the render path consults host pauses (a 429 or 503
with ``Retry-After`` received for a host, :class:`~scrapy_cdp_pool.core.gates.HostPauses`,
registered on the gates by the resilience feature) and the spacing of a
slot's requests (:class:`~scrapy_cdp_pool.core.politeness.RequestSpacing`:
``DOWNLOAD_DELAY``, ``CDP_POOL_HOST_RATE``).

A rendered or plain request waits while its host is paused, before it takes
a browser slot, again once it has one (the slot is given back,
:class:`HostPaused`) and right before its navigation starts; a response whose
headers ask for a pause starts it at once, as soon as they arrive. Right
before the navigation (or a plain request's download), in this order: the
wait for the slot's delay, the host's pause checked, the launch checks (a
cluster worker's lease, :meth:`RequestGates.check_launch`), the start
claimed, and the navigation command queued, with no await between the last
four.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from scrapy_cdp_pool.core.gates import HostPauses, RequestGates, host_of
from scrapy_cdp_pool.core.politeness import Turn
from scrapy_cdp_pool.errors import CDPPoolError
from scrapy_cdp_pool.render import RenderHooks

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

    from scrapy_cdp_pool.render import DocumentResponse


class HostPaused(CDPPoolError):
    """The request's host was paused while the request waited for its slot
    or right before its navigation: the slot is given back and it waits."""


class HostGate:
    """Host pauses for one crawler's download handler; a no-op while no
    pause feature is registered on ``gates``."""

    def __init__(self, gates: RequestGates, stats: StatsCollector) -> None:
        self._gates = gates
        self._stats = stats

    @property
    def _pauses(self) -> HostPauses | None:
        return self._gates.host_pauses  # read per call: set by a middleware's constructor

    async def wait(self, host: str) -> None:
        """Wait while ``host`` is paused (counted in ``cdp_pool/host_pause_waits``)."""
        pauses = self._pauses
        if pauses is not None and pauses.remaining(host) > 0:
            self._stats.inc_value("cdp_pool/host_pause_waits")
            await pauses.wait_open(host)

    def check(self, host: str) -> None:
        """:raises HostPaused: ``host`` is paused now."""
        pauses = self._pauses
        if pauses is not None and pauses.remaining(host) > 0:
            raise HostPaused

    def observe(self, request: Request, response: Response) -> None:
        """A plain response: start the pause its headers ask for."""
        pauses = self._pauses
        if pauses is not None:
            pauses.observe(
                request, response.url, response.status, response.headers.get(b"Retry-After")
            )

    def slot_place(self, request: Request) -> AbstractAsyncContextManager[None]:
        """One of the places of ``request``'s downloader slot, held for the
        block (``CONCURRENT_REQUESTS_PER_DOMAIN``, see
        :class:`~scrapy_cdp_pool.core.politeness.SlotConcurrency`)."""
        return self._gates.concurrency.held(request)

    async def reserve(self, request: Request) -> Turn | None:
        """Wait for ``request``'s turn in its spaced slots (holding no
        browser slot), and, in a cluster with a host rate, until the fleet's
        next start of its host could be claimed; ``None`` when no delay
        applies to it. A turn must be :meth:`end`-ed, whatever happens."""
        turn = await self._gates.spacing.reserve(request)
        fleet = self._gates.fleet_spacing
        if turn is not None and fleet is not None:
            try:
                while True:
                    host = host_of(request)
                    left = fleet.wait_s(host)
                    if left <= 0:
                        break
                    await fleet.sleep(host, left)
            except BaseException:
                self.end(turn)
                raise
        return turn

    def end(self, turn: Turn | None) -> None:
        """The request of ``turn`` is over (see ``RequestSpacing.end``); a
        fleet start it claimed counts as answered."""
        self._answered(turn)
        self._gates.spacing.end(turn)

    async def start_plain(self, request: Request, host: str) -> Turn | None:
        """Before a plain request's download: wait while ``host`` is paused
        and for its turn, then claim the start (see the module's order). The
        turn must be :meth:`end`-ed once the download is over."""
        spacing = self._gates.spacing
        while True:
            await self.wait(host)
            turn = await spacing.reserve(request)
            try:
                await self._ready(host, turn)
                self.check(host)
                self._gates.check_launch(request)
            except HostPaused:
                self.end(turn)
                continue
            except BaseException:  # cancelled: its batons go back
                self.end(turn)
                raise
            if turn is not None:
                spacing.claim(turn)
            return turn

    async def _ready(self, host: str, turn: Turn | None) -> None:
        """Wait for ``turn`` (this process's spacing), then, in a cluster
        with a host rate, claim the fleet's next start of ``host`` (kept on
        the turn until its answer); returns right after the claim, with no
        await."""
        if turn is None:
            return
        spacing = self._gates.spacing
        while True:
            await spacing.wait(turn)
            fleet = self._gates.fleet_spacing
            if fleet is None or turn.fleet is not None:
                return
            left, token = fleet.claim(host)
            if token is not None:
                turn.fleet = (host, token)
                return
            if left <= 0:
                return  # not claimable now (Redis): this process's spacing holds
            await fleet.sleep(host, left)

    def _answered(self, turn: Turn | None, *, last: bool = True) -> None:
        """``turn``'s fleet claim has its answer (called again, a redirect
        the browser followed, it moves the next start on, as long as the
        claim is still the host's last); ``last``: its request ended."""
        fleet = self._gates.fleet_spacing
        if turn is not None and turn.fleet is not None and fleet is not None:
            host, token = turn.fleet
            if last:
                turn.fleet = None
            fleet.answered(host, token)

    @property
    def checks_leaving(self) -> bool:
        """Whether a render's navigation is checked again where it leaves the
        browser (``RenderHooks.before_leaving``: its request must be paused
        at the request stage)."""
        return self._gates.has_leaving_checks

    def hooks(self, request: Request, host: str, turn: Turn | None) -> RenderHooks | None:
        """The render's hooks: the navigation waits for ``turn`` (the slot's
        delay), none starts while ``host`` is paused, and a main document's
        headers that ask for a pause start it at once (before the page's slot
        is released); ``None`` without host pauses or a turn."""
        pauses = self._pauses
        gates = self._gates
        if pauses is None and turn is None and not gates.has_launch_checks:
            return None
        spacing = self._gates.spacing

        async def before_navigate() -> None:
            await self._ready(host, turn)
            try:
                self.check(host)
                self._gates.check_launch(request)
            except BaseException:
                self._answered(turn)
                raise
            if turn is not None:
                spacing.claim(turn)

        def on_document(document: DocumentResponse) -> None:
            # the pause first: the next start (here or, in a cluster, on any
            # worker) sees it once the answer lets it go
            if pauses is not None:
                pauses.observe(
                    request, document.url, document.status, _retry_after(document.headers)
                )
            if turn is not None:
                spacing.arrived(turn)
                self._answered(turn, last=False)

        before_leaving = None
        if gates.has_leaving_checks:

            def before_leaving() -> None:
                gates.check_leaving(request)

        return RenderHooks(
            before_navigate=before_navigate, on_document=on_document, before_leaving=before_leaving
        )


def _retry_after(headers: list[tuple[str, str]]) -> bytes | None:
    """The ``Retry-After`` value among a render's response headers."""
    for name, value in headers:
        if name.lower() == "retry-after":
            return value.encode("latin-1", "replace")
    return None
