"""Host pacing: when a request may reach its site, owned by one object per
crawler, :class:`HostPacing` (``runtime.pacing``), the one interface the
download handler calls. It holds Scrapy's delays and slots as the site sees
them, ``CDP_POOL_HOST_RATE``, the host pauses after a 429 or ``Retry-After``
and, in a cluster, the fleet-wide claim of a host's next start; features plug
their parts in one way (:meth:`HostPacing.plug`, keys in :mod:`.plugs`).

Each rule is enforced in one module: ``DOWNLOAD_DELAY`` (and the slots) in
:mod:`.spacing`, ``CDP_POOL_HOST_RATE`` in :mod:`.host_rate` (the queue) and
:mod:`.spacing` (the start, a slot per host, with the fleet's claim), pauses in
:mod:`.host_pacing` (docs/architecture.md, "Host pacing").
"""

from scrapy_cdp_pool.core.pacing.host_pacing import HostPacing, HostPaused
from scrapy_cdp_pool.core.pacing.plugs import FLEET_SPACING, HOST_PAUSES, FleetSpacing, HostPauses
from scrapy_cdp_pool.core.pacing.spacing import Turn

__all__ = [
    "FLEET_SPACING",
    "HOST_PAUSES",
    "FleetSpacing",
    "HostPacing",
    "HostPaused",
    "HostPauses",
    "Turn",
]
