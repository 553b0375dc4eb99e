"""What features plug into the crawler's host pacing
(:class:`~scrapy_cdp_pool.core.pacing.HostPacing`), one way for each:
``pacing.plug(KEY, part)``, with the part's typed key below.

- :data:`HOST_PAUSES`: the crawler's host pauses, a 429 or 503 with
  ``Retry-After`` (:class:`~scrapy_cdp_pool.resilience.HostPauseMiddleware`,
  or the cluster's, whose pauses are the fleet's);
- :data:`FLEET_SPACING`: a host's starts spaced across the workers of a
  cluster (``CDP_POOL_HOST_RATE``, :mod:`scrapy_cdp_pool.cluster.fleet_spacing`).

A part says what it knows (how long a host is paused, whether the fleet's
next start of a host may be claimed); the pacing decides, in one place, when a
request waits for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from scrapy_cdp_pool.core.parts import PartKey

if TYPE_CHECKING:
    from scrapy import Request


class HostPauses(Protocol):
    """The crawler's host pauses, as the pacing asks them (see
    :class:`~scrapy_cdp_pool.resilience.HostPauseMiddleware`)."""

    def observe(self, request: Request, url: str, status: int, retry_after: bytes | None) -> None:
        """A response to ``request`` came from ``url``: pause its host if it asks."""

    def remaining(self, host: str) -> float:
        """Seconds until ``host``'s pause ends, ``0.0`` if it is not paused
        (in a cluster, "not paused" is asked of Redis: one round trip)."""

    def known_remaining(self, host: str) -> float:
        """:meth:`remaining` as this process knows it, with no Redis call
        (in a cluster, a pause pushed to it or read by :meth:`remaining`
        may still be missing; the check right before a navigation or a
        plain download, :meth:`remaining`, sees it)."""

    def is_open(self, host: str) -> bool:
        """Whether the queue may hand out a request to ``host`` now (no Redis
        call); when not, the engine is woken at the pause's end."""

    async def wait_open(self, host: str) -> float:
        """Wait until ``host`` is not paused; the seconds waited."""


class FleetSpacing(Protocol):
    """Starts of one host spaced across crawler processes (a cluster's
    ``CDP_POOL_HOST_RATE``; :mod:`scrapy_cdp_pool.cluster.fleet_spacing`)."""

    def claim(self, host: str) -> tuple[float, str | None]:
        """Claim ``host``'s next start: ``(0.0, token)``, or ``(seconds to
        wait, None)``, or ``(0.0, None)`` when it cannot be claimed now."""

    def wait_s(self, host: str) -> float:
        """Seconds until a claim of ``host`` could succeed (nothing claimed)."""

    def answered(self, host: str, token: str) -> None:
        """The start claimed with ``token`` has its answer (or ended)."""

    async def sleep(self, host: str, left_s: float) -> None:
        """Wait ``left_s`` as :meth:`claim` or :meth:`wait_s` said (or less:
        until what it waits for changes)."""


HOST_PAUSES: PartKey[HostPauses] = PartKey("host pauses")
FLEET_SPACING: PartKey[FleetSpacing] = PartKey("fleet spacing")
