"""The settings of the shared profiles, the fleet budget and the metrics:
refused by name (never showing a Redis password); metric labels without
secrets. No Redis, no browser."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.telemetry.metrics import endpoint_label


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"CDP_POOL_CLUSTER_BUDGET_MAX": 3}, "needs CDP_POOL_CLUSTER_REDIS_URL"),
        ({"CDP_POOL_CLUSTER_REDIS_URL": "http://u:secret@x/"}, "is not a Redis URL"),
        (
            {
                "CDP_POOL_CLUSTER_REDIS_URL": "redis://u:secret@h/0",
                "CDP_POOL_CLUSTER_BUDGET_MAX": 0,
            },
            "CDP_POOL_CLUSTER_BUDGET_MAX: 0 is not an integer >= 1",
        ),
        ({"CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS": 0}, "CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS"),
        # a lease under the 1 s Redis call timeout ran out all crawl long, exit 0
        # (a trial: 0.01 s, 221 of 300 requests poisoned); refused by name now
        (
            {"CDP_POOL_CLUSTER_LEASE_SECONDS": 0.01},
            r"CDP_POOL_CLUSTER_LEASE_SECONDS: 0\.01 is not a finite number of seconds >= 1 ",
        ),
        ({"CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS": "0.5"}, "BUDGET_LEASE_SECONDS: '0.5' is not"),
        ({"CDP_POOL_METRICS_PORT": 70000}, "CDP_POOL_METRICS_PORT: 70000 is not a port"),
        ({"CDP_POOL_METRICS_PORT": True}, "CDP_POOL_METRICS_PORT: True is not a port"),
        ({"CDP_POOL_METRICS_HOST": ""}, "CDP_POOL_METRICS_HOST: '' is not an address"),
    ],
)
def test_bad_settings_are_refused_by_name(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as refused:
        PoolConfig.from_settings(Settings(settings))
    assert "secret" not in str(refused.value)


def test_good_settings_are_read() -> None:
    config = PoolConfig.from_settings(
        Settings({"CDP_POOL_CLUSTER_REDIS_URL": "unix:///run/redis.sock",
                  "CDP_POOL_CLUSTER_BUDGET_MAX": "40", "CDP_POOL_METRICS_PORT": "0"})
    )  # fmt: skip
    assert (config.cluster.budget_max, config.telemetry.metrics_port) == (40, 0)
    assert (config.telemetry.metrics_host, config.cluster.budget_lease_s) == ("127.0.0.1", 30.0)


def test_endpoint_labels_carry_no_secret() -> None:
    assert endpoint_label("wss://user:pw@cdp.example:443/chrome?token=s3cret#x") == (
        "wss://cdp.example:443/chrome"
    )
    assert endpoint_label("ws+unix:///tmp/d/cdp.sock:/") == "ws+unix:///tmp/d/cdp.sock:/"
    assert endpoint_label(None) == ""
