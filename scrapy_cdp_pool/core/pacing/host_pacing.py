"""HostPacing: the crawler's host pacing, the one interface the download
handler calls before a request reaches a site, and the one place each rule
of when it may is enforced:

- Scrapy's delays (``DOWNLOAD_DELAY`` and its jitter, ``DOWNLOAD_SLOTS``,
  AutoThrottle) and ``CDP_POOL_HOST_RATE`` where the site sees them:
  :class:`~scrapy_cdp_pool.core.pacing.spacing.RequestSpacing`, a slot's
  concurrency: :class:`~scrapy_cdp_pool.core.pacing.concurrency.SlotConcurrency`;
- ``CDP_POOL_HOST_RATE`` where the queue hands requests out:
  :class:`~scrapy_cdp_pool.core.pacing.host_rate.HostRate`, and across a
  cluster's workers the fleet's claim (:data:`~scrapy_cdp_pool.core.pacing.plugs.FLEET_SPACING`);
- host pauses (a 429 or 503 with ``Retry-After``,
  :data:`~scrapy_cdp_pool.core.pacing.plugs.HOST_PAUSES`): held here, in the
  queue (a host gate of :class:`~scrapy_cdp_pool.core.gates.RequestGates`) and
  for the requests past it.

Features plug their parts in one way, :meth:`HostPacing.plug` (see
:mod:`~scrapy_cdp_pool.core.pacing.plugs`); the core imports none of them.

A rendered or plain request waits while its host is paused, before it takes
a browser slot, again once it has one (the slot is given back,
:class:`HostPaused`) and right before its navigation starts; a response whose
headers ask for a pause starts it at once, as soon as they arrive. Only the
check right before the navigation (or a plain download) asks every source
(:meth:`HostPauses.remaining`: in a cluster, Redis when no pause was pushed);
the earlier ones ask what this process knows
(:meth:`HostPauses.known_remaining`), as they only spare a slot or a context. Right
before the navigation (or a plain request's download), in this order: the
wait for the slot's delay, the host's pause checked, the launch checks (a
cluster worker's lease, :meth:`RequestGates.check_launch`), the start
claimed, and the navigation command queued, with no await between the last
four.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar, cast

from scrapy_cdp_pool.core.gates import RequestGates, host_of
from scrapy_cdp_pool.core.pacing.concurrency import SlotConcurrency
from scrapy_cdp_pool.core.pacing.host_rate import HostRate
from scrapy_cdp_pool.core.pacing.plugs import FLEET_SPACING, HOST_PAUSES, FleetSpacing, HostPauses
from scrapy_cdp_pool.core.pacing.spacing import RequestSpacing, Turn
from scrapy_cdp_pool.errors import CDPPoolError
from scrapy_cdp_pool.render import RenderHooks

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_cdp_pool.core.parts import PartKey
    from scrapy_cdp_pool.render import DocumentResponse

T = TypeVar("T")


class HostPaused(CDPPoolError):
    """The request's host was paused while the request waited for its slot
    or right before its navigation: the slot is given back and it waits."""


class HostPacing:
    """The host pacing of one crawler (``runtime.pacing``, made with its
    request gates). ``host_rate``: ``CDP_POOL_HOST_RATE``, starts a second
    per host (``None``: no rate)."""

    def __init__(self, crawler: Crawler, gates: RequestGates, host_rate: float | None) -> None:
        self.crawler = crawler
        self._gates = gates
        interval_s = 1.0 / host_rate if host_rate else 0.0
        #: the delays between starts of one slot, as the site sees them
        self.spacing = RequestSpacing(crawler, interval_s)
        #: a downloader slot's concurrency, held in the download handler
        self.concurrency = SlotConcurrency(crawler)
        #: the host rate where the queue hands requests out (``None``: no rate)
        self.rate = HostRate(gates, interval_s) if interval_s else None
        self._pauses: HostPauses | None = None
        self._fleet: FleetSpacing | None = None
        self._in_queue = False
        if self.rate is not None:
            gates.add_dequeue_hook(self.rate.on_dequeued)
            self._hold_queue()

    def plug(self, key: PartKey[T], part: T) -> None:
        """Plug a feature's ``part`` in under ``key`` (a key of
        :mod:`~scrapy_cdp_pool.core.pacing.plugs`), in place of any before it.

        :raises KeyError: ``key`` is not one of those.
        """
        if key is HOST_PAUSES:
            self._pauses = cast(HostPauses, part)
            self._hold_queue()
        elif key is FLEET_SPACING:
            self._fleet = cast(FleetSpacing, part)
        else:
            raise KeyError(f"host pacing has no place for {key!r}")

    def _hold_queue(self) -> None:
        """Register :meth:`queue_open` on the request gates (once)."""
        if not self._in_queue:
            self._in_queue = True
            self._gates.add_host_check(self.queue_open)

    def queue_open(self, host: str) -> bool:
        """Host gate of the scheduler queue: the host rate's next hand-out
        is due and the host is not paused (each wakes the engine when it
        will be)."""
        rate = self.rate
        if rate is not None and not rate.is_open(host):
            return False
        pauses = self._pauses
        return pauses is None or pauses.is_open(host)

    async def wait(self, host: str) -> None:
        """Wait while ``host`` is paused as this process knows
        (:meth:`HostPauses.known_remaining`; counted in
        ``cdp_pool/host_pause_waits``)."""
        pauses = self._pauses
        if pauses is not None and pauses.known_remaining(host) > 0:
            stats: Any = self.crawler.stats
            stats.inc_value("cdp_pool/host_pause_waits")
            await pauses.wait_open(host)

    def check(self, host: str) -> None:
        """Right before a start: whether ``host`` is paused now, asked of
        every source (:meth:`HostPauses.remaining`).

        :raises HostPaused: it is.
        """
        pauses = self._pauses
        if pauses is not None and pauses.remaining(host) > 0:
            raise HostPaused

    def check_known(self, host: str) -> None:
        """Whether ``host`` is paused as this process knows
        (:meth:`HostPauses.known_remaining`: no Redis call).

        :raises HostPaused: it is.
        """
        pauses = self._pauses
        if pauses is not None and pauses.known_remaining(host) > 0:
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
        :class:`~scrapy_cdp_pool.core.pacing.concurrency.SlotConcurrency`)."""
        return self.concurrency.held(request)

    async def reserve(self, request: Request) -> Turn | None:
        """Wait for ``request``'s turn in its spaced slots (holding no
        browser slot), and, in a cluster with a host rate, until the fleet's
        next start of its host could be claimed; ``None`` when no delay
        applies to it. A turn must be :meth:`end`-ed, whatever happens."""
        turn = await self.spacing.reserve(request)
        fleet = self._fleet
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
        self.spacing.end(turn)

    async def start_plain(self, request: Request, host: str) -> Turn | None:
        """Before a plain request's download: wait while ``host`` is paused
        and for its turn, then claim the start (see the module's order). The
        turn must be :meth:`end`-ed once the download is over."""
        spacing = self.spacing
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
        spacing = self.spacing
        while True:
            await spacing.wait(turn)
            fleet = self._fleet
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
        fleet = self._fleet
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
        spacing = self.spacing

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
