"""The cluster frontier's Lua steps against a real ``redis-server``, with two
workers' :class:`Frontier` objects in this process (no browser): which request
a take hands out, what stays held back, what a lease's expiry puts back, the
fencing tokens; and ``scrapy-cdp-pool cluster`` on that Redis.

A lease is made to expire by setting its expiry in the past (the ``leases``
sorted set's score), not by waiting."""

from __future__ import annotations

import json

import pytest

from scrapy_cdp_pool.cluster.figures import read_figures
from scrapy_cdp_pool.cluster.frontier import Frontier
from scrapy_cdp_pool.cluster.keys import gate_of, key_prefix
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.tools.cli import main
from tests.cluster_harness import RedisServer
from tests.profiles import token


def frontiers(module_redis_server: RedisServer, count: int = 2, **limits: float) -> list[Frontier]:
    name = token()
    client = connect(module_redis_server.url, 5)
    return [
        Frontier(client, name, f"w{i}", lease_s=30, **limits)  # type: ignore[arg-type]
        for i in range(count)
    ]


def push(
    frontier: Frontier, label: str, host: str = "h", identity: str = "", priority: int = 0
) -> None:
    assert frontier.push(label.encode(), gate_of(host, identity), priority)


def taken(frontier: Frontier) -> str | None:
    result = frontier.take()
    return result.data.decode() if result.lease is not None else None


def test_a_busy_identity_holds_back_only_its_own_requests(module_redis_server: RedisServer) -> None:
    one, two = frontiers(module_redis_server)
    push(one, "a1", identity="a", priority=10)
    push(one, "a2", identity="a", priority=10)
    push(one, "b1", identity="b", priority=5)
    push(one, "n1", priority=0)
    first = one.take()
    assert first.data == b"a1"
    assert first.token is not None
    # a2 is the best request left, but its identity is busy on the other worker.
    assert taken(two) == "b1"
    assert taken(two) == "n1"
    assert taken(two) is None
    one.settle([f"r:{first.lease}"])  # its download is over
    assert taken(two) == "a2"


def test_a_take_wakes_another_worker_only_for_gates_open_beyond_its_spare_slots(
    module_redis_server: RedisServer,
) -> None:
    """Issue 38: a take looks past the request it takes and pushes a wake
    token only when gates are open beyond the worker's own ``spare`` slots
    (before: whenever the ``ready`` set was not empty, its gates closed or
    not, so a waiting worker woke to a take that found nothing: about half of
    a profile-bound crawl's takes). Gates found closed on the way are parked."""
    (one,) = frontiers(module_redis_server, 1)
    wake = f"{one.prefix}wake"
    push(one, "a1", identity="a", priority=9)
    push(one, "a2", identity="a", priority=8)  # its profile busy once a1 is taken
    one.client.delete(wake)  # the push's own token (a gate that had none)
    first = one.take(spare=0)
    assert (first.data, first.ready_left) == (b"a1", False)
    assert one.client.llen(wake) == 0  # a2's gate is closed: nobody is woken for it
    assert one.client.zcard(f"{one.prefix}ready") == 0  # parked on the way
    push(one, "b1", identity="b")
    push(one, "c1", identity="c")
    push(one, "d1", identity="d")
    one.client.delete(wake)  # the pushes' own tokens
    second = one.take(spare=2)
    assert (second.data, second.ready_left) == (b"b1", True)
    assert one.client.llen(wake) == 0  # c1 and d1: this worker takes them next
    third = one.take(spare=0)
    assert (third.data, third.ready_left) == (b"c1", True)
    assert one.client.llen(wake) == 1  # d1 is open, this worker has no slot for it
    assert taken(one) == "d1"
    assert taken(one) is None


def test_a_push_says_whether_its_gate_became_ready(module_redis_server: RedisServer) -> None:
    """Issue 38: the scheduler takes again after a push only when the push
    made its gate ready (a take may start it); before, after every push,
    and a push into a gate parked behind its busy profile made a take that
    found nothing."""
    (one,) = frontiers(module_redis_server, 1)
    push(one, "a1", identity="a")
    assert one.readied  # a gate that had none
    push(one, "a2", identity="a")
    assert not one.readied  # in ready already
    assert taken(one) == "a1"
    assert taken(one) is None  # a2's gate parked: its profile is busy
    push(one, "a3", identity="a")
    assert not one.readied  # parked
    push(one, "b1", identity="b")
    assert one.readied
    assert taken(one) == "b1"


def test_priorities_are_honoured_across_gates_and_fifo_within(
    module_redis_server: RedisServer,
) -> None:
    (one,) = frontiers(module_redis_server, 1)
    for label, host, priority in [("x", "h1", 0), ("y", "h2", 3), ("z", "h1", 3), ("w", "h3", -1)]:
        push(one, label, host=host, priority=priority)
    assert [taken(one) for _ in range(5)] == ["y", "z", "x", "w", None]


def test_host_concurrency_and_pauses_hold_fleet_wide(module_redis_server: RedisServer) -> None:
    one, two = frontiers(module_redis_server, host_concurrency=1)
    push(one, "h-a", host="h", identity="a")
    push(one, "h-b", host="h", identity="b")
    push(one, "p-1", host="p")
    push(one, "q-1", host="q")
    first = one.take()
    assert first.data == b"h-a"
    one.pause_host("p", 30)
    assert taken(two) == "q-1"  # h is at its limit (on the other worker), p is paused
    assert taken(two) is None
    assert two.pause_left("p") > 0
    one.settle([f"r:{first.lease}"])
    assert taken(two) == "h-b"


def test_an_expired_lease_is_queued_again_and_its_identity_freed(
    module_redis_server: RedisServer,
) -> None:
    one, two = frontiers(module_redis_server)
    push(one, "a1", identity="a")
    push(one, "a2", identity="a")
    dead = one.take()
    assert taken(two) is None  # a is busy
    client = one.client
    client.zadd(f"{one.prefix}leases", {dead.lease: 0})  # its lease ran out
    client.pexpire(f"{one.prefix}identity:a", 1)  # and with it its identity lock
    again = two.take()
    assert again.requeued == 1
    assert again.data == b"a1"  # back in its place, ahead of a2
    assert again.token is not None
    assert dead.token is not None
    assert again.token > dead.token
    lock = client.hgetall(f"{one.prefix}identity:a")
    assert lock == {b"owner": b"w1", b"token": str(again.token).encode(), b"lease": b"1"}
    # The dead worker's late acknowledgement changes nothing.
    assert one.settle([f"a:{dead.lease}"]) == 0
    assert one.renew([dead.lease]) == [dead.lease]
    assert two.settle([f"a:{again.lease}"]) == 1
    assert taken(two) == "a2"


def test_acknowledged_requests_are_forgotten_and_given_back_ones_queued(
    module_redis_server: RedisServer,
) -> None:
    (one,) = frontiers(module_redis_server, 1)
    push(one, "r1")
    push(one, "r2")
    first, second = one.take(), one.take()
    assert one.settle([f"a:{first.lease}", f"g:{second.lease}"]) == 2
    assert one.pending() == (1, 0)
    assert taken(one) == "r2"


def test_fingerprints_refuse_a_second_push(module_redis_server: RedisServer) -> None:
    (one,) = frontiers(module_redis_server, 1)
    assert one.push(b"r", gate_of("h", ""), 0, "seen", b"fp")
    assert not one.push(b"r", gate_of("h", ""), 0, "seen", b"fp")
    assert one.pending() == (1, 0)


def test_cli_status_pause_resume_purge(
    module_redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = frontiers(module_redis_server)
    push(one, "a1", identity="a", priority=2)
    push(one, "b1", priority=0)
    push(one, "b2", priority=0)
    held = one.take()
    one.pause_host("p", 30)
    base = ["cluster", "status", "--redis", module_redis_server.url, "--name", one.prefix[10:-2]]
    assert main([*base, "--interval", "0"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["queued"] == 2
    assert state["queued_per_priority"] == {"0": 2}
    assert [(lease["owner"], lease["identity"]) for lease in state["leases"]] == [("w0", "a")]
    assert state["busy_identities"]["a"]["token"] == held.token
    assert set(state["paused_hosts_s_left"]) == {"p"}
    assert state["workers"]["live"] == ["w0"]
    name = ["--redis", module_redis_server.url, "--name", one.prefix[10:-2]]
    assert main(["cluster", "pause", *name]) == 0
    assert taken(two) is None
    assert main(["cluster", "resume", *name]) == 0
    assert taken(two) == "b1"
    assert main(["cluster", "purge", *name]) == 1  # workers are live
    assert "live" in capsys.readouterr().err
    assert main(["cluster", "purge", *name, "--force"]) == 0
    assert not one.client.keys(f"{key_prefix(one.prefix[10:-2])}*")


def test_the_figures_a_worker_sends_to_its_metrics(module_redis_server: RedisServer) -> None:
    """``read_figures``: what ``CDP_POOL_METRICS_PORT`` shows of the cluster,
    read from the same Redis state the take leaves."""
    one, two = frontiers(module_redis_server)
    push(one, "a1", host="h", identity="alice")
    push(one, "b1", host="h")
    push(one, "c1", host="p")
    assert taken(one) == "a1"  # leased by w0, alice locked
    assert taken(two) == "b1"  # leased by w1
    one.pause_host("p", 30)
    figures = read_figures(one.client, one.prefix, lease_s=30)
    assert figures.queued_total == 1
    assert figures.leased == 2
    assert dict(figures.leases_by_owner) == {"w0": 1, "w1": 1}
    assert figures.busy_identities == 1
    assert set(figures.paused_hosts) == {"p"}
    assert 0 < figures.paused_hosts["p"] <= 30
    assert figures.workers == 2
    assert figures.requeued == 0
