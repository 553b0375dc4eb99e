"""ClusterFigures: what the cluster tells the telemetry about the whole crawl
(the interface between the cluster and the metrics).

The cluster fills one when it reads its queues (e.g. at each heartbeat) and
sends it with the :data:`~scrapy_cdp_pool.telemetry.signals.cluster_figures_updated`
signal::

    crawler.signals.send_catch_log(cluster_figures_updated, figures=ClusterFigures(...))

The metrics then show the figures of the last one sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ClusterFigures:
    """The cluster at one instant, as this worker last read it.

    ``queued``: requests waiting in the frontier, per priority (empty when
    not read: the figures workers send count them only in all);
    ``queued_total``: requests waiting, whatever their priority.
    ``leased``: requests taken by a worker and not acknowledged yet;
    ``leases_by_owner``: the same per worker id. ``busy_identities``:
    profiles locked by a worker now. ``paused_hosts``: each paused host and
    the seconds left of its pause. ``workers``: workers alive by heartbeat.
    ``pages_per_second``: the cluster's rate, ``None`` when not measured.
    ``requeued``: requests put back after their lease expired, so far.
    """

    queued: Mapping[int, int] = field(default_factory=dict)
    queued_total: int = 0
    leased: int = 0
    leases_by_owner: Mapping[str, int] = field(default_factory=dict)
    busy_identities: int = 0
    paused_hosts: Mapping[str, float] = field(default_factory=dict)
    workers: int = 0
    pages_per_second: float | None = None
    requeued: int = 0
