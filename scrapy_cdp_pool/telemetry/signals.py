"""Signals of the telemetry, for the components that publish its figures
(:class:`~scrapy_cdp_pool.telemetry.metrics.MetricsExtension`).

- :data:`status_sampled`: sent by
  :class:`~scrapy_cdp_pool.telemetry.extension.EngineStatusExtension` after each
  status sample (the figures of one status JSON line), with ``sample`` (a
  :class:`~scrapy_cdp_pool.telemetry.sample.StatusSample`).
- :data:`cluster_figures_updated`: sent by the cluster whenever it has read
  the cluster's figures, with ``figures`` (a
  :class:`~scrapy_cdp_pool.telemetry.metrics.ClusterFigures`).
"""

status_sampled = object()
cluster_figures_updated = object()
