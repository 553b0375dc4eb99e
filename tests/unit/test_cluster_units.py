"""The cluster's pure parts: settings, key names, scores, URL redaction."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool.cluster.frontier import PRIORITY_LIMIT, score_base
from scrapy_cdp_pool.cluster.install import check_redis
from scrapy_cdp_pool.cluster.keys import gate_of, key_prefix, split_gate
from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.settings.config import PoolConfig


@pytest.mark.parametrize("value", ["http://:pw@redis:6379/0", "redis.internal:6379", 6379])
def test_a_bad_redis_url_is_refused_by_name_without_its_value(value: Any) -> None:
    with pytest.raises(ValueError, match=r"REDIS_URL: .* is not a Redis") as raised:
        PoolConfig.from_settings(Settings({"CDP_POOL_CLUSTER_REDIS_URL": value}))
    assert "pw" not in str(raised.value)


def test_cluster_settings_are_read_with_their_defaults() -> None:
    config = PoolConfig.from_settings(Settings({"CDP_POOL_CLUSTER_REDIS_URL": "unix:///r.sock"}))
    assert config.cluster.redis_url == "unix:///r.sock"
    assert (config.cluster.name, config.cluster.lease_s, config.cluster.keep_open) == (
        None, 30.0, False,
    )  # fmt: skip


def test_a_password_is_redacted() -> None:
    assert redact_url("redis://:s3cret@host:6379/0") == "redis://:***@host:6379/0"
    assert redact_url("redis://user:s3cret@host/1") == "redis://user:***@host/1"
    assert redact_url("unix:///run/redis.sock") == "unix:///run/redis.sock"
    # redis-py also takes the password from the query string
    assert redact_url("unix:///r.sock?password=S3cret&db=2") == "unix:///r.sock?password=***&db=***"
    assert (
        redact_url("redis://127.0.0.1:1/0?password=S3cret") == "redis://127.0.0.1:1/0?password=***"
    )
    assert redact_url("redis://u:pw@127.0.0.1:notaport/0") == "redis://u:***@127.0.0.1:notaport/0"


@pytest.mark.parametrize(
    "url", ["unix:///nowhere/r.sock?password=S3cret", "redis://u:S3cret@127.0.0.1:notaport/0"]
)
def test_a_redis_that_does_not_answer_is_named_without_any_password(url: str) -> None:
    with pytest.raises(ValueError, match="CDP_POOL_CLUSTER_REDIS_URL") as raised:
        check_redis(url)
    assert "S3cret" not in str(raised.value)


@pytest.mark.parametrize(
    ("host", "identity", "not_before"),
    [("example.com", "", None), ("h", "a|b|c", 1700000000123), ("", "x", None)],
)
def test_a_gate_names_its_host_identity_and_time(
    host: str, identity: str, not_before: int | None
) -> None:
    assert split_gate(gate_of(host, identity, not_before)) == (host, not_before, identity)


def test_keys_share_one_hash_tag() -> None:
    assert key_prefix("shop") == "cdp_pool:{shop}:"


def test_scores_order_priorities_then_ids_and_refuse_what_they_cannot() -> None:
    scores = [score_base(p) + i for p, i in [(5, 9), (5, 10), (0, 1), (-3, 2)]]
    assert scores == sorted(scores)
    assert abs(score_base(PRIORITY_LIMIT - 1)) + 2**33 < 2**53  # exact in a double
    with pytest.raises(ValueError, match="priority 524288 is outside"):
        score_base(PRIORITY_LIMIT)
