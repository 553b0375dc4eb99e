"""Every Redis error that means "cannot serve now" is an outage
(:func:`~scrapy_cdp_pool.cluster.frontier.redis_outage`), named by its cause;
a bug is not. The errors are redis-py's own: built by its reply parser from
the error replies Redis and Redis Cluster send (``LOADING``, ``MOVED``,
``TRYAGAIN``, ``CLUSTERDOWN`` cannot be produced cheaply by a test's own
server), and the exceptions its cluster client raises itself when it gives up
following redirects. ``MISCONF``, ``READONLY``, out of memory and timeouts
from a real ``redis-server`` are in tests/test_cluster_redis_errors.py and
tests/test_cluster_faults.py."""

from __future__ import annotations

import pytest
from redis._parsers.base import BaseParser
from redis.exceptions import ClusterError, ConnectionError, SlotNotCoveredError, TimeoutError

from scrapy_cdp_pool.cluster.frontier import redis_outage
from scrapy_cdp_pool.cluster.link import redis_bug

#: error replies as Redis 7 sends them, and a word of the cause named
REPLIES = [
    ("LOADING Redis is loading the dataset in memory", "loading"),
    (("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
      "to disk. Commands that may modify the data set are disabled"), "cannot persist"),
    ("READONLY You can't write against a read only replica.", "read-only"),
    ("OOM command not allowed when used memory > 'maxmemory'.", "out of memory"),
    ("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
     "primary is down"),
    ("NOREPLICAS Not enough good replicas to write.", "not enough replicas"),
    ("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
     "busy running a script"),
    ("MOVED 3999 127.0.0.1:6381", "moved"),
    ("ASK 3999 127.0.0.1:6381", "moved"),
    ("TRYAGAIN Multiple keys request during rehashing of slot", "TRYAGAIN"),
    ("CLUSTERDOWN The cluster is down", "CLUSTERDOWN"),
    # a script's redis.call refused: the code inside the script error's text
    (("ERR Error running script (call to f_0a1b): @user_script:12: @user_script: 12: -MISCONF "
      "Redis is configured to save RDB snapshots"), "cannot persist"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "cause"), REPLIES)
def test_each_error_reply_that_means_cannot_serve_now_is_an_outage(reply: str, cause: str) -> None:
    error = BaseParser.parse_error(reply)
    outage = redis_outage(error)
    assert outage is not None, (type(error).__name__, reply)
    assert cause.lower() in outage.lower(), outage


def test_the_cluster_clients_own_give_ups_are_outages() -> None:
    """A storm of MOVED/ASK/TRYAGAIN past redis-py's redirect budget ends in
    ``ClusterError("TTL exhausted.")``; a slot no node serves (a failover) in
    ``SlotNotCoveredError``, which is not even a ``RedisError``. Before: both
    were taken for bugs (``None``), so a worker stopped on them."""
    assert "TTL exhausted" in (redis_outage(ClusterError("TTL exhausted.")) or "")
    uncovered = SlotNotCoveredError('Slot "3999" is not covered by the cluster.')
    assert "served by no node" in (redis_outage(uncovered) or "")


def test_timeouts_and_lost_connections_are_outages_and_bugs_are_not() -> None:
    assert redis_outage(TimeoutError("Timeout reading from socket")) == "timed out"
    assert redis_outage(ConnectionError("Connection closed by server.")) == "unreachable"
    for reply in (
        "WRONGTYPE Operation against a key holding the wrong kind of value",
        "ERR unknown command 'FOO'",
        "NOSCRIPT No matching script. Please use EVAL.",
        "ERR Error running script (call to f_0a1b): @user_script:3: attempt to compare nil",
    ):
        assert redis_outage(BaseParser.parse_error(reply)) is None, reply
        assert redis_bug(BaseParser.parse_error(reply)), reply  # the worker stops


def test_only_redis_errors_that_are_not_outages_stop_a_worker() -> None:
    """:func:`~scrapy_cdp_pool.cluster.link.redis_bug`: an outage is waited
    out, an error of the caller's own (a priority out of range) is raised as
    it is; neither stops the worker."""
    assert not redis_bug(BaseParser.parse_error("OOM command not allowed"))
    assert not redis_bug(ConnectionError("Connection closed by server."))
    assert not redis_bug(TimeoutError("Timeout reading from socket"))
    assert not redis_bug(ValueError("priority 2**20 is outside what the frontier orders"))
