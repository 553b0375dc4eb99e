"""One status sample: the engine, the scraper, the crawler process, the CDP
server and the pool at one instant, as a log line and as a JSON object.

Units are in the field names (``_mb``: mebibytes, ``_bytes``, ``_s``: seconds,
``_per_minute``). ``None`` means "not available", never zero: the server memory
of a remote endpoint, the disk queue of a crawl without ``JOBDIR``, the
scraper before the spider opens or after it closes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConnectionStatus:
    """One pooled CDP connection: its index, its endpoint, its state
    (``connecting``, ``ready``, ``broken``, ``closed``) and what is open on it."""

    connection: int
    endpoint: str | None
    state: str
    open_contexts: int
    open_pages: int


@dataclass(frozen=True)
class EndpointStatus:
    """One CDP endpoint: its server kind (``None`` until it answered), its
    connections (all, and ready) and the contexts and pages open on them."""

    endpoint: str
    kind: str | None
    connections: int
    connections_ready: int
    open_contexts: int
    open_pages: int


@dataclass(frozen=True)
class StatusSample:
    """Everything one status line says.

    Engine: ``active_downloads`` (``len(engine.downloader.active)``) against
    ``concurrent_requests`` (``CONCURRENT_REQUESTS``); scheduler queue lengths
    in requests: ``scheduler_requests`` (``len(scheduler)``),
    ``scheduler_memory_requests`` and ``scheduler_disk_requests`` (``None``
    without ``JOBDIR`` or with a scheduler that has no such queues), and
    ``identity_waiting_requests`` (requests held back because their profile is
    busy; see :func:`scrapy_cdp_pool.telemetry.collect.profile_waiting`).

    Scraper: ``scraper_active_size_bytes`` against
    ``scraper_max_active_size_bytes`` (``SCRAPER_SLOT_MAX_ACTIVE_SIZE``), and
    ``scraper_needs_backout`` (the engine stops taking requests from the
    scheduler while it is true).

    Progress: totals so far (``responses``, ``items``, ``retries``,
    ``download_errors``: Scrapy's ``response_received_count``,
    ``item_scraped_count``, ``retry/count``, ``downloader/exception_count``) and
    rates over the time since the previous sample.

    Memory: ``crawler_rss_mb`` (this process only); ``server`` is
    ``"embedded"``, ``"remote"`` or ``None`` (no pool yet, or not started);
    ``server_memory_mb`` is the embedded server's whole process tree, PSS
    where the OS gives it else RSS (``server_memory_source``: ``"pss"``,
    ``"rss"``, or ``"n/a"`` for a remote endpoint, whose memory no CDP server
    publishes); ``server_rss_mb`` and ``server_pss_mb`` are the two sums.

    Budget (``None`` without a :class:`~scrapy_cdp_pool.ConcurrencyBudget`):
    ``budget_pages_in_flight`` (all its crawlers), ``budget_desired``,
    ``budget_min``, ``budget_max`` (pages), ``budget_overloaded`` (the signals
    its last tick found overloaded, empty for none).
    """

    timestamp: str
    event: str
    elapsed_s: float
    active_downloads: int
    concurrent_requests: int
    scheduler_requests: int | None
    scheduler_memory_requests: int | None
    scheduler_disk_requests: int | None
    identity_waiting_requests: int
    scraper_active_size_bytes: int | None
    scraper_max_active_size_bytes: int
    scraper_needs_backout: bool | None
    responses: int
    items: int
    responses_per_minute: float
    items_per_minute: float
    retries: int
    download_errors: int
    crawler_rss_mb: float | None
    server: str | None
    server_kind: str | None
    server_memory_mb: float | None
    server_memory_source: str | None
    server_rss_mb: float | None
    server_pss_mb: float | None
    server_processes: int | None
    pool_state: str | None
    pages_in_flight: int
    pool_waiting_leases: int
    pool_holds: tuple[str, ...]
    connections: tuple[ConnectionStatus, ...]
    endpoints: tuple[EndpointStatus, ...]
    budget_pages_in_flight: int | None = None
    budget_desired: int | None = None
    budget_min: int | None = None
    budget_max: int | None = None
    budget_overloaded: tuple[str, ...] | None = None
    #: dedicated Lightpanda servers running (a profile's time zone, a sign-in's proxy);
    #: their memory is in the ``server_*`` figures
    dedicated_servers: int = 0
    #: of the pages in flight, those handed to a callback
    #: (``meta["cdp_include_page"]``), each holding its slot until closed
    live_pages: int = 0

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples as lists, ``None`` as ``null``)."""
        return dataclasses.asdict(self)

    def log_message(self) -> tuple[str, tuple[Any, ...]]:
        """The INFO line as a %-style format and its arguments, e.g.::

            Status (interval): downloads 2/16 active; scheduler 40 requests
            (40 in memory, n/a on disk), 0 waiting for their profile; scraper
            0.1 MB active of 5.0 MB, backout no; 120 responses/min, 0 items/min,
            220 responses, 0 items, 0 retries, 0 download errors; crawler RSS
            92.4 MB; server lightpanda (embedded) 41.2 MB PSS in 1 process;
            pool ready, 2 pages in flight (0 live), 0 leases waiting, holds none;
            per connection (contexts/pages) #0 ready 1/1, #1 ready 1/1;
            per endpoint http://127.0.0.1:40133 lightpanda 2/2; budget none

        (one line in the log; with a budget it ends ``budget 3 pages in flight,
        desired 4 (min 1, max 4), overloaded no``).
        """
        message = (
            "Status (%s): downloads %d/%d active; scheduler %s requests (%s in memory, "
            "%s on disk), %d waiting for their profile; scraper %s active of %s, "
            "backout %s; %.0f responses/min, %.0f items/min, %d responses, %d items, "
            "%d retries, %d download errors; crawler RSS %s; server %s; pool %s, "
            "%d pages in flight (%d live), %d leases waiting, holds %s; per connection "
            "(contexts/pages) %s; per endpoint %s; budget %s"
        )
        args = (
            self.event,
            self.active_downloads,
            self.concurrent_requests,
            _or_na(self.scheduler_requests),
            _or_na(self.scheduler_memory_requests),
            _or_na(self.scheduler_disk_requests),
            self.identity_waiting_requests,
            _bytes_as_mb(self.scraper_active_size_bytes),
            _bytes_as_mb(self.scraper_max_active_size_bytes),
            _yes_no(self.scraper_needs_backout),
            self.responses_per_minute,
            self.items_per_minute,
            self.responses,
            self.items,
            self.retries,
            self.download_errors,
            _mb(self.crawler_rss_mb),
            self._server_text(),
            self.pool_state or "not created",
            self.pages_in_flight,
            self.live_pages,
            self.pool_waiting_leases,
            ", ".join(self.pool_holds) or "none",
            ", ".join(
                f"#{c.connection} {c.state} {c.open_contexts}/{c.open_pages}"
                for c in self.connections
            )
            or "none",
            ", ".join(
                f"{e.endpoint} {e.kind or 'unknown'} {e.open_contexts}/{e.open_pages}"
                for e in self.endpoints
            )
            or "none",
            self._budget_text(),
        )
        return message, args

    def _budget_text(self) -> str:
        if self.budget_desired is None:
            return "none"
        return (
            f"{self.budget_pages_in_flight} pages in flight, desired {self.budget_desired} "
            f"(min {self.budget_min}, max {self.budget_max}), overloaded "
            f"{', '.join(self.budget_overloaded or ()) or 'no'}"
        )

    def _server_text(self) -> str:
        if self.server is None:
            return "not started"
        dedicated = f" + {self.dedicated_servers} dedicated" if self.dedicated_servers else ""
        label = f"{self.server_kind or 'unknown'} ({self.server}{dedicated})"
        if self.server_memory_mb is None:
            if self.server == "remote":
                return f"{label} memory n/a"
            return f"{label} {'starting' if self.pool_state == 'starting' else 'not running'}"
        processes = self.server_processes or 0
        return (
            f"{label} {self.server_memory_mb:.1f} MB "
            f"{(self.server_memory_source or '').upper()} in {processes} "
            f"process{'es' if processes != 1 else ''}"
        )


def _or_na(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} MB"


def _bytes_as_mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / (1024 * 1024):.1f} MB"


def _yes_no(value: bool | None) -> str:
    if value is None:
        return "n/a"
    return "yes" if value else "no"
