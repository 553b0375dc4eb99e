"""MetricsExtension: this worker's telemetry as Prometheus metrics, over HTTP,
when ``CDP_POOL_METRICS_PORT`` is set (default: off).

The figures are those of the status JSON lines
(:class:`~scrapy_cdp_pool.telemetry.sample.StatusSample`), as of the last
sample (every ``CDP_POOL_STATUS_INTERVAL_SECONDS``, at idle and at stop),
under the same names with a ``cdp_pool_`` prefix, each labelled with the
spider (``spider``):

- each number is a gauge (``cdp_pool_pages_in_flight``, ``cdp_pool_crawler_rss_mb``,
  ``cdp_pool_elapsed_s``...; a yes/no figure is 1/0), except the totals
  ``responses``, ``items``, ``retries`` and ``download_errors``, which are
  counters (``cdp_pool_responses_total``...); a figure that is ``null`` in the
  JSON line ("not available") has no sample, never 0;
- the words (``event``, ``server``, ``server_kind``, ``server_memory_source``,
  ``pool_state``) are labels of ``cdp_pool_status_info`` (value 1);
- ``pool_holds`` and ``budget_overloaded`` are ``cdp_pool_pool_hold{hold}``
  and ``cdp_pool_budget_overloaded{signal}`` (1 each);
- per connection ``cdp_pool_connection_open_contexts`` and
  ``..._open_pages`` (labels ``connection``, ``endpoint``, ``state``); per
  endpoint ``cdp_pool_endpoint_connections``, ``..._connections_ready``,
  ``..._open_contexts``, ``..._open_pages`` (labels ``endpoint``, ``kind``).

With the cluster, the figures it last sent
(:class:`~scrapy_cdp_pool.telemetry.cluster_figures.ClusterFigures`):
``cdp_pool_cluster_queued_requests{priority}`` (when read per priority),
``cdp_pool_cluster_queued_requests_all``,
``cdp_pool_cluster_leased_requests``, ``cdp_pool_cluster_leases{owner}``,
``cdp_pool_cluster_busy_identities``, ``cdp_pool_cluster_paused_hosts``,
``cdp_pool_cluster_host_pause_seconds{host}``, ``cdp_pool_cluster_workers``,
``cdp_pool_cluster_pages_per_second``, ``cdp_pool_cluster_requeued_total``.

The endpoint is ``http://CDP_POOL_METRICS_HOST:CDP_POOL_METRICS_PORT/metrics``
(a ``prometheus_client`` server in a thread of this process). It listens on
127.0.0.1 by default (a TCP port: other users of the machine can read it, as a
scraper must): anyone who can reach it reads these figures (host names,
endpoints, queue sizes; never a cookie, a URL's query or a secret), so widen
``CDP_POOL_METRICS_HOST`` only on a network you trust. Port 0 takes any free
port (logged). Crawlers of one process on the same port share the endpoint,
each with its ``spider`` label.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import start_http_server
from prometheus_client.metrics_core import Metric
from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.telemetry.cluster_figures import ClusterFigures
from scrapy_cdp_pool.telemetry.sample import StatusSample
from scrapy_cdp_pool.telemetry.signals import cluster_figures_updated, status_sampled

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

PREFIX = "cdp_pool_"
#: status figures that only grow: Prometheus counters (``..._total``)
COUNTERS = frozenset({"responses", "items", "retries", "download_errors"})
#: status figures that are words: labels of ``cdp_pool_status_info``
WORDS = ("event", "server", "server_kind", "server_memory_source", "pool_state")
_SKIPPED = frozenset({"timestamp", "connections", "endpoints", "pool_holds", "budget_overloaded"})


class _Endpoint:
    """One HTTP endpoint of this process and the crawlers it serves."""

    def __init__(self, host: str, port: int) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.server, self.thread = start_http_server(port, addr=host, registry=self.registry)
        self.host = host
        self.port = int(self.server.server_port)
        self.users = 0

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


_endpoints: dict[tuple[str, int], _Endpoint] = {}
_endpoints_lock = threading.Lock()


class StatusCollector:
    """A ``prometheus_client`` collector of one crawler's last figures
    (read by the server's thread; replaced whole by the crawl's thread)."""

    def __init__(self, spider: str) -> None:
        self.spider = spider
        self.sample: StatusSample | None = None
        self.cluster: ClusterFigures | None = None

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        sample, cluster = self.sample, self.cluster  # one consistent pair of references
        if sample is not None:
            yield from status_metrics(sample, self.spider)
        if cluster is not None:
            yield from cluster_metrics(cluster, self.spider)


def status_metrics(sample: StatusSample, spider: str) -> Iterator[Metric]:
    """``sample`` as metrics (see the module for the names)."""
    labels, values = ["spider"], [spider]
    for item in dataclasses.fields(sample):
        name = item.name
        value = getattr(sample, name)
        if name in _SKIPPED or name in WORDS or value is None:
            continue
        if name in COUNTERS:
            counter = CounterMetricFamily(PREFIX + name, f"status figure {name}", labels=labels)
            counter.add_metric(values, float(value))
            yield counter
        else:
            gauge = GaugeMetricFamily(PREFIX + name, f"status figure {name}", labels=labels)
            gauge.add_metric(values, float(value))
            yield gauge
    words = [w for w in WORDS if getattr(sample, w) is not None]
    info = GaugeMetricFamily(
        PREFIX + "status_info", "status words (value 1)", labels=["spider", *words]
    )
    info.add_metric([spider, *(str(getattr(sample, w)) for w in words)], 1)
    yield info
    yield _each(PREFIX + "pool_hold", "pool holds (1 each)", "hold", sample.pool_holds, spider)
    yield _each(
        PREFIX + "budget_overloaded",
        "overloaded budget signals (1 each)",
        "signal",
        sample.budget_overloaded or (),
        spider,
    )
    connection_labels = ["spider", "connection", "endpoint", "state"]
    for figure in ("open_contexts", "open_pages"):
        gauge = GaugeMetricFamily(
            f"{PREFIX}connection_{figure}", f"per connection: {figure}", labels=connection_labels
        )
        for c in sample.connections:
            gauge.add_metric(
                [spider, str(c.connection), endpoint_label(c.endpoint), c.state], getattr(c, figure)
            )
        yield gauge
    for figure in ("connections", "connections_ready", "open_contexts", "open_pages"):
        gauge = GaugeMetricFamily(
            f"{PREFIX}endpoint_{figure}",
            f"per endpoint: {figure}",
            labels=["spider", "endpoint", "kind"],
        )
        for e in sample.endpoints:
            gauge.add_metric([spider, endpoint_label(e.endpoint), e.kind or ""], getattr(e, figure))
        yield gauge


def endpoint_label(url: str | None) -> str:
    """An endpoint as a label: without credentials, query or fragment (a
    remote endpoint's URL may carry a token; the label is served over TCP)."""
    if not url:
        return ""
    url = url.split("#", 1)[0].split("?", 1)[0]
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    netloc, slash, path = rest.partition("/")
    return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"


def cluster_metrics(figures: ClusterFigures, spider: str) -> Iterator[Metric]:
    """``figures`` as ``cdp_pool_cluster_*`` metrics."""
    name = PREFIX + "cluster_"

    def one(metric: str, text: str, value: float) -> GaugeMetricFamily:
        gauge = GaugeMetricFamily(name + metric, text, labels=["spider"])
        gauge.add_metric([spider], value)
        return gauge

    queued = GaugeMetricFamily(
        name + "queued_requests", "requests waiting, per priority", labels=["spider", "priority"]
    )
    for priority, count in sorted(figures.queued.items()):
        queued.add_metric([spider, str(priority)], count)
    yield queued
    yield one("queued_requests_all", "requests waiting, all priorities", figures.queued_total)
    yield one("leased_requests", "requests leased by a worker", figures.leased)
    leases = GaugeMetricFamily(
        name + "leases", "requests leased, per worker", labels=["spider", "owner"]
    )
    for owner, count in sorted(figures.leases_by_owner.items()):
        leases.add_metric([spider, owner], count)
    yield leases
    yield one("busy_identities", "identities locked by a worker", figures.busy_identities)
    yield one("paused_hosts", "hosts paused (Retry-After, backoff)", len(figures.paused_hosts))
    pauses = GaugeMetricFamily(
        name + "host_pause_seconds", "seconds left of a host's pause", labels=["spider", "host"]
    )
    for host, left in sorted(figures.paused_hosts.items()):
        pauses.add_metric([spider, host], left)
    yield pauses
    yield one("workers", "workers alive by heartbeat", figures.workers)
    if figures.pages_per_second is not None:
        yield one("pages_per_second", "the cluster's pages per second", figures.pages_per_second)
    requeued = CounterMetricFamily(
        name + "requeued", "requests put back after their lease expired", labels=["spider"]
    )
    requeued.add_metric([spider], figures.requeued)
    yield requeued


def _each(
    metric: str, text: str, label: str, items: tuple[str, ...], spider: str
) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(metric, text, labels=["spider", label])
    for item in items:
        gauge.add_metric([spider, item], 1)
    return gauge


class MetricsExtension:
    """Publishes the crawler's figures (see the module). Installed by the
    add-on; not configured without ``CDP_POOL_METRICS_PORT``.

    :raises ValueError: a setting is invalid, or ``CDP_POOL_METRICS_HOST``
        and ``CDP_POOL_METRICS_PORT`` cannot be listened on (in use, not an
        address of this machine, not allowed): the message names both.
    """

    def __init__(self, crawler: Crawler, host: str, port: int) -> None:
        self.crawler = crawler
        spider = str(getattr(crawler.spidercls, "name", None) or crawler.spidercls.__name__)
        self.collector = StatusCollector(spider)
        with _endpoints_lock:
            endpoint = _endpoints.get((host, port)) if port else None
            if endpoint is None:
                try:
                    endpoint = _Endpoint(host, port)
                except OSError as e:  # in use, an address not of this machine...
                    raise ValueError(
                        f"CDP_POOL_METRICS_PORT = {port}, CDP_POOL_METRICS_HOST = {host!r}: "
                        f"cannot serve metrics there: {e.strerror or e}"
                    ) from e
                _endpoints[(host, endpoint.port)] = endpoint
            endpoint.users += 1
            endpoint.registry.register(self.collector)
        self.endpoint = endpoint
        self.url = f"http://{host}:{endpoint.port}/metrics"
        logger.info(
            "Prometheus metrics of spider %r at %s (CDP_POOL_METRICS_PORT, CDP_POOL_METRICS_HOST)",
            spider,
            self.url,
            extra={"crawler": crawler},
        )
        connect = crawler.signals.connect
        connect(self.status_sampled, signal=status_sampled)
        connect(self.cluster_figures_updated, signal=cluster_figures_updated)
        connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = runtime_of(crawler).config
        if config.telemetry.metrics_port is None:
            raise NotConfigured
        return cls(crawler, config.telemetry.metrics_host, config.telemetry.metrics_port)

    def status_sampled(self, sample: StatusSample) -> None:
        self.collector.sample = sample

    def cluster_figures_updated(self, figures: ClusterFigures) -> None:
        self.collector.cluster = figures

    def engine_stopped(self) -> None:
        """Stop serving this crawler's figures (after the last sample: the
        status extension samples at ``engine_stopped`` first, being installed
        before); the endpoint closes with its last crawler."""
        endpoint = self.endpoint
        with _endpoints_lock:
            endpoint.registry.unregister(self.collector)
            endpoint.users -= 1
            if endpoint.users:
                return
            _endpoints.pop((endpoint.host, endpoint.port), None)
        endpoint.stop()
