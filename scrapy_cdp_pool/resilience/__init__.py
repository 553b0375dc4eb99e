"""Resilience: retry with backoff, host pauses on 429/``Retry-After``, exact
per-host limits, failures recorded by reason, bad requests refused by name.
The add-on installs all of them."""

from scrapy_cdp_pool.resilience.failures import FailureRecorderMiddleware
from scrapy_cdp_pool.resilience.host_limits import HostLimits
from scrapy_cdp_pool.resilience.host_pause import HostPauseMiddleware
from scrapy_cdp_pool.resilience.request_checks import RequestChecksMiddleware
from scrapy_cdp_pool.resilience.retry import RetryPolicyMiddleware

__all__ = [
    "FailureRecorderMiddleware",
    "HostLimits",
    "HostPauseMiddleware",
    "RequestChecksMiddleware",
    "RetryPolicyMiddleware",
]
