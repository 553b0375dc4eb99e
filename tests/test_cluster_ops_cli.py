"""The operator's commands on a stuck fleet, against a real ``redis-server``:
``scrapy-cdp-pool cluster leases`` / ``poisoned``, an unknown crawl name, an
unreachable Redis. A stuck request is one leased by a worker that stopped
answering; a poisoned one ran out of leases ``max_deliveries`` times (made to
run out by their score, not by waiting)."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass

import pytest
from scrapy import Request
from scrapy.utils.request import fingerprint

from scrapy_cdp_pool.cluster.frontier import Frontier
from scrapy_cdp_pool.cluster.keys import gate_of
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.jobdir.queues import serialize
from scrapy_cdp_pool.tools.cli import main
from scrapy_cdp_pool.tools.cluster_records import request_url
from tests.cluster_harness import RedisServer
from tests.profiles import token

STUCK_URL = "https://stuck.example/page?n=1"
POISON_URL = "https://poison.example/crash"
WAITING_URL = "https://queued.example/"


@dataclass
class Fleet:
    name: str
    url: str
    stuck: Frontier
    """The worker holding the stuck request (w-stuck)."""
    other: Frontier
    stuck_lease: str
    poisoned_id: str

    def args(self, *command: str) -> list[str]:
        return ["cluster", *command, "--redis", self.url, "--name", self.name]


def _push(frontier: Frontier, url: str, host: str, priority: int = 0) -> None:
    data = serialize(Request(url, priority=priority), None)
    assert frontier.push(data, gate_of(host, ""), priority)


def stuck_fleet(module_redis_server: RedisServer) -> Fleet:
    """A crawl with one request leased by ``w-stuck`` (never acknowledged),
    one poisoned (its lease ran out twice, ``max_deliveries = 2``, then handed
    out marked, failed and acknowledged by ``w-other``) and one queued."""
    client = connect(module_redis_server.url, 5)
    name = f"ops-{token()}"
    stuck, other = (
        Frontier(client, name, f"w-{who}", lease_s=30, max_deliveries=2)
        for who in ("stuck", "other")
    )
    _push(other, POISON_URL, "poison.example")
    poison = other.take()
    for _ in range(2):  # its worker died each time: the lease ran out
        client.zadd(f"{other.prefix}leases", {poison.lease or "": 0})
        again = other.take()
        assert again.requeued == 1
    assert again.poisoned == 2  # handed out marked: fails by name, then is acknowledged
    assert other.settle([f"a:{again.lease}"]) == 1
    _push(stuck, STUCK_URL, "stuck.example")
    held = stuck.take()
    assert held.lease
    _push(other, WAITING_URL, "queued.example")
    return Fleet(name, module_redis_server.url, stuck, other, held.lease, again.lease or "")


@pytest.fixture
def fleet(module_redis_server: RedisServer) -> Fleet:
    return stuck_fleet(module_redis_server)


def test_leases_lists_each_lease_with_its_url_worker_and_age(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(fleet.args("leases", "--json")) == 0
    (lease,) = json.loads(capsys.readouterr().out)
    assert (lease["id"], lease["url"], lease["owner"]) == (fleet.stuck_lease, STUCK_URL, "w-stuck")
    assert lease["age_s"] >= 0
    assert 0 < lease["expires_in_s"] <= 30
    # the lease's age is Redis's clock minus when it was taken: made older here
    lease_key = f"{fleet.stuck.prefix}lease:{fleet.stuck_lease}"
    fleet.stuck.client.hincrby(lease_key, "taken", -3_600_000)
    assert main(fleet.args("leases")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 leased"
    age, owner = out[1].split()[:2]
    assert owner == "w-stuck"
    assert age.endswith("s")
    assert float(age[:-1]) >= 3600
    assert out[1].endswith(STUCK_URL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", ["status", "leases", "poisoned"])
@pytest.mark.parametrize("scheme", ["redis", "redis+cluster"])
def test_an_unreachable_redis_is_one_line_with_exit_status_1(
    command: str, scheme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{scheme}://:hunter2@127.0.0.1:{free_port()}/0"
    assert main(["cluster", command, "--redis", url, "--name", "products"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"scrapy-cdp-pool cluster: Redis at {scheme}://:***@127.0.0.1:")
    assert "hunter2" not in line
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("command", ["status", "leases", "poisoned", "purge", "resume"])
def test_a_crawl_name_with_no_key_is_refused(
    fleet: Fleet, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    misspelt = f"{fleet.name}x"
    args = ["cluster", command, "--redis", fleet.url, "--name", misspelt]
    assert main([*args, *(["--interval", "0"] if command == "status" else [])]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert f"no crawl named {misspelt!r}" in line
    # pausing one before it starts is allowed
    assert main(["cluster", "pause", "--redis", fleet.url, "--name", misspelt]) == 0


def test_a_poisoned_request_is_counted_apart_listed_and_requeued(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*fleet.args("status"), "--interval", "0"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert (state["done"], state["poisoned"], state["queued"], state["leased"]) == (0, 1, 1, 1)
    assert main(fleet.args("poisoned", "--json")) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert (record["id"], record["url"]) == (fleet.poisoned_id, POISON_URL)
    assert record["why"].startswith("its lease ran out 2 times")
    assert record["when"].endswith("Z")
    assert record["age_s"] >= 0
    assert not record["leased"]
    assert record["fingerprint"] == fingerprint(Request(POISON_URL)).hex()
    assert main(fleet.args("poisoned")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 poisoned"
    assert f"id {fleet.poisoned_id}  {POISON_URL}: its lease ran out 2 times" in out[1]

    assert main(fleet.args("poisoned", "--requeue", "https://not.poisoned/")) == 1
    assert "'https://not.poisoned/'" in capsys.readouterr().err
    assert main(fleet.args("poisoned", "--requeue", POISON_URL)) == 0
    assert capsys.readouterr().out.strip().endswith("1 poisoned requests requeued")
    # queued again at its own gate, its leases run out counted from 0: done when acknowledged
    again = fleet.other.take()
    assert (again.lease, again.poisoned) == (fleet.poisoned_id, 0)
    assert request_url(again.data) == POISON_URL
    assert fleet.other.settle([f"a:{again.lease}"]) == 1
    assert main([*fleet.args("status"), "--interval", "0"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert (state["done"], state["poisoned"], state["expired"]) == (1, 0, 0)


def test_poisoned_requests_are_dropped_by_fingerprint_or_all(
    module_redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = stuck_fleet(module_redis_server)
    client, prefix = fleet.stuck.client, fleet.stuck.prefix
    fp = fingerprint(Request(POISON_URL)).hex()
    assert main(fleet.args("poisoned", "--drop", fp)) == 0
    assert capsys.readouterr().out.strip().endswith("1 poisoned requests dropped")
    assert not client.hexists(f"{prefix}req", fleet.poisoned_id)
    assert not client.exists(f"{prefix}poisoned")
    assert main(fleet.args("poisoned", "--drop")) == 0  # none left: nothing to do
    assert capsys.readouterr().out.strip().endswith("0 poisoned requests dropped")


def test_a_poisoned_request_a_worker_is_failing_now_is_left(
    module_redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Poisoned while its lease is held (its lease ran out a third time, then
    a worker took it to fail it): requeue leaves it, says so, exit status 1;
    the worker's acknowledgement keeps it poisoned, not done."""
    fleet = stuck_fleet(module_redis_server)
    other = fleet.other
    _push(other, "https://poison.example/second", "poison.example", priority=5)
    first = other.take()
    for _ in range(2):
        other.client.zadd(f"{other.prefix}leases", {first.lease or "": 0})
        failing = other.take()
    assert failing.poisoned == 2
    assert main(fleet.args("poisoned", "--json")) == 0
    records = {r["url"]: r for r in json.loads(capsys.readouterr().out)}
    assert records["https://poison.example/second"]["leased"]
    assert main(fleet.args("poisoned", "--requeue")) == 1
    captured = capsys.readouterr()
    assert captured.out.strip().endswith("1 poisoned requests requeued")  # the first one
    assert f"(ids {failing.lease})" in captured.err
    assert other.settle([f"a:{failing.lease}"]) == 1
    assert main([*fleet.args("status"), "--interval", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["poisoned"] == 1
