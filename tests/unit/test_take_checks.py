"""TakeChecks (no Redis): a host's latest take stands for its pause check
for ``fresh_s`` only, and a broad crawl's hosts do not pile up."""

from __future__ import annotations

from scrapy_cdp_pool.cluster import take_checks
from scrapy_cdp_pool.cluster.take_checks import TakeChecks


def test_the_latest_take_of_a_host_stands_while_fresh() -> None:
    checks = TakeChecks(fresh_s=0.5)
    checks.taken("a", 10.0)
    checks.taken("a", 9.0)  # an older take answered late: not the latest
    assert checks.checked_at("a", 10.5) == 10.0
    assert checks.checked_at("a", 10.6) is None
    assert checks.checked_at("b", 10.0) is None
    checks.taken("a", 10.4)
    assert checks.checked_at("a", 10.6) == 10.4


def test_stale_hosts_are_dropped_when_many() -> None:
    checks = TakeChecks(fresh_s=0.5)
    most = take_checks._PRUNE_AT
    for n in range(most):
        checks.taken(f"h{n}", 1.0)
    checks.taken("late", 1.2)
    assert len(checks) == most + 1  # all still fresh
    checks.taken("later", 5.0)
    assert len(checks) == 1
    assert checks.checked_at("later", 5.0) == 5.0
