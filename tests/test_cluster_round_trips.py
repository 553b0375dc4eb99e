"""Redis round trips of the cluster frontier, counted by the client
(``Frontier.calls``), against a real ``redis-server``: releases and
acknowledgements ride on the next take, and a fingerprint a worker knows to be
stored is refused without asking Redis."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler
from twisted.internet import reactor
from twisted.internet.task import deferLater

from scrapy_cdp_pool import Addon, scrapy_internals
from scrapy_cdp_pool.cluster.frontier import SEEN, Frontier
from scrapy_cdp_pool.cluster.host_pause import ClusterHostPauseMiddleware
from scrapy_cdp_pool.cluster.keys import gate_of
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.cluster.shards import Buckets
from scrapy_cdp_pool.cluster.take_checks import FRESH_S
from scrapy_cdp_pool.core.runtime import runtime_of
from tests.cluster_harness import RedisServer, cluster
from tests.crawl import crawl
from tests.profiles import token
from tests.servers import SiteServer


def test_a_release_rides_on_the_take_that_follows(module_redis_server: RedisServer) -> None:
    """Before: ``take`` had no releases (TypeError); a release was a round trip of its own."""
    name = token()
    client = connect(module_redis_server.url, 5)
    one = Frontier(client, name, "w1", lease_s=30)
    for label in (b"a1", b"a2"):
        assert one.push(label, gate_of("h", "a"), 0)
    first = one.take()
    assert first.data == b"a1"
    assert one.take().lease is None  # profile a is busy
    calls = one.calls
    second = one.take([first.lease or ""], releases=[f"r:{first.lease}"])
    assert (second.data, second.settled, one.calls - calls) == (b"a2", 1, 1)
    client.close()


def test_a_fingerprint_known_to_be_stored_costs_no_round_trip(
    module_redis_server: RedisServer,
) -> None:
    """Before: every push of a duplicate was a round trip."""
    name = token()
    client = connect(module_redis_server.url, 5)
    one, two = (Frontier(client, name, worker, lease_s=30) for worker in ("w1", "w2"))
    assert one.push(b"r", gate_of("h", ""), 0, SEEN, b"fp")
    calls = one.calls
    assert not one.push(b"r", gate_of("h", ""), 0, SEEN, b"fp")
    assert one.calls == calls  # its own push: known
    assert not two.push(b"r", gate_of("h", ""), 0, SEEN, b"fp")
    assert not two.push(b"r", gate_of("h", ""), 0, SEEN, b"fp")
    assert two.calls == 1  # Redis said so once
    assert client.hlen(f"{one.prefix}req") == 1
    client.close()


def test_pushes_in_one_round_trip_survive_a_flushed_script_cache(
    module_redis_server: RedisServer,
) -> None:
    """``push_many`` sends ``EVALSHA``; after Redis lost its scripts (a
    restart, ``SCRIPT FLUSH``) each is run again on its own, loading it,
    and every answer is the script's: stored, then a duplicate."""
    client = connect(module_redis_server.url, 5)
    one = Frontier(client, token(), "w1", lease_s=30)
    calls = [one.prepare_push(b"r%d" % n, gate_of("h", ""), 0, SEEN, b"fp%d" % n) for n in range(3)]
    assert None not in calls
    assert one.prepare_push(b"r0", gate_of("h", ""), 0, SEEN, b"fp0") is None  # known from here
    client.script_flush()
    answers = one.push_many([call for call in calls if call is not None])
    assert [answer != 0 for answer in answers] == [True, True, True], answers
    assert one.push_many([call for call in calls if call is not None]) == [0, 0, 0]
    assert client.zcard(f"{one.prefix}q:{gate_of('h', '')}") == 3
    client.close()


class Spider(scrapy.Spider):
    name = "round-trips"


@pytest_twisted.ensureDeferred
async def test_the_scheduler_path_makes_one_round_trip_per_request(
    module_redis_server: RedisServer,
) -> None:
    """The scheduler driven as the engine drives it (each request handed out,
    downloaded, its callback yielding one new request and two duplicates, then
    done, ``len(scheduler)`` asked three times as the telemetry asks it),
    counted exactly: the engine's own loop is replaced by these calls, since
    its timing would make the count vary. Before: 8 round trips per request
    (take, push, two duplicate pushes, release, three ``len``); then 2 (take
    with the release and acknowledgement, push); now 1 (the take carries the
    push of the request the last callback yielded, pipelined before it)."""
    settings: dict[str, Any] = {"ADDONS": {Addon: 0}, **cluster(module_redis_server.url, token())}
    crawler = get_crawler(Spider, settings)
    spider = crawler._create_spider()
    crawler.spider = spider
    in_progress: set[scrapy.Request] = set()
    nextcall = SimpleNamespace(schedule=lambda: None)  # the engine's loop: nothing to wake
    crawler.engine = SimpleNamespace(_slot=SimpleNamespace(inprogress=in_progress,  # type: ignore[assignment]
                                                           nextcall=nextcall))  # fmt: skip
    gates = runtime_of(crawler).gates
    scheduler = load_object(crawler.settings["SCHEDULER"]).from_crawler(crawler)
    scheduler.open(spider)

    def request(n: int) -> scrapy.Request:
        return scrapy.Request(f"http://127.0.0.1:9/{n}", meta={"cdp_profile": f"p{n % 3}"})

    total, warm_up = 40, 10
    scheduler.enqueue_request(request(0))
    calls = 0
    for n in range(1, total + 1):
        if n == warm_up:
            calls = scheduler.frontier.calls
        taken = scheduler.next_request()
        assert taken is not None
        in_progress.add(taken)
        assert len(scheduler) >= 0  # the request reached the downloader
        scheduler.enqueue_request(request(n))
        for duplicate in (0, n - 1):
            assert not scheduler.enqueue_request(request(duplicate))
        assert len(scheduler) >= 0  # scheduled
        gates.on_finished(taken)  # the download is over
        assert len(scheduler) >= 0  # its response received
        in_progress.discard(taken)  # ...and the engine is done with it
    assert scheduler.frontier.calls - calls == total + 1 - warm_up
    scheduler.close("finished")
    assert crawler.stats.get_value("cdp_pool/cluster/acked") == total


def _scheduler(redis_url: str, name: str) -> tuple[Any, Any]:
    """An opened cluster scheduler of crawl ``name`` and its crawler, with
    an engine stand-in that has nothing in progress and nothing to wake."""
    crawler = get_crawler(Spider, {"ADDONS": {Addon: 0}, **cluster(redis_url, name)})
    spider = crawler._create_spider()
    crawler.spider = spider
    nextcall = SimpleNamespace(schedule=lambda: None)
    crawler.engine = SimpleNamespace(_slot=SimpleNamespace(inprogress=set(),  # type: ignore[assignment]
                                                           nextcall=nextcall))  # fmt: skip
    scheduler = load_object(crawler.settings["SCHEDULER"]).from_crawler(crawler)
    scheduler.open(spider)
    return scheduler, crawler


@pytest_twisted.ensureDeferred
async def test_the_requests_of_one_turn_are_stored_in_one_round_trip(
    module_redis_server: RedisServer,
) -> None:
    """A callback's 50 new links, one of them stored by another worker
    before, and one twice: ``enqueue_request`` answers at once (``False``
    for the repeat, which this worker knows), and at the end of the turn the
    51 pushes go to Redis in one round trip; the one only Redis knew is then
    logged as a duplicate and ``request_dropped`` is sent for it. Before:
    one round trip per request (51)."""
    name = token()
    scheduler, crawler = _scheduler(module_redis_server.url, name)
    other, _ = _scheduler(module_redis_server.url, name)
    dropped: list[str] = []

    def on_dropped(request: scrapy.Request, spider: scrapy.Spider) -> None:
        dropped.append(request.url)

    crawler.signals.connect(on_dropped, signal=signals.request_dropped)
    try:
        links = [scrapy.Request(f"http://127.0.0.1:9/page/{n}") for n in range(50)]
        known_elsewhere = scrapy.Request("http://127.0.0.1:9/page/other")
        assert other.enqueue_request(known_elsewhere.copy())
        assert other._flush_unstored()
        calls = scheduler.shards.calls
        answers = [scheduler.enqueue_request(r) for r in [*links, known_elsewhere, links[0].copy()]]
        assert answers == [True] * 51 + [False]
        assert scheduler.shards.calls == calls  # nothing sent yet
        deadline = time.monotonic() + 30
        while scheduler._unstored:  # stored at the end of the turn
            assert time.monotonic() < deadline
            await deferLater(reactor, 0.001, lambda: None)
        assert scheduler.shards.calls - calls == 1
        assert dropped == [known_elsewhere.url]
        stats = crawler.stats.get_stats()
        assert stats["cdp_pool/cluster/stored"] == 50
        assert stats["dupefilter/filtered"] == 2
        taken = {scheduler.next_request().url for _ in range(51)}  # type: ignore[union-attr]
        assert taken == {r.url for r in [*links, known_elsewhere]}  # each stored once
    finally:
        scheduler.close("finished")
        other.close("finished")


@pytest_twisted.ensureDeferred
async def test_a_parent_is_acknowledged_after_the_take_that_stored_its_children(
    module_redis_server: RedisServer,
) -> None:
    """A take carries the pushes of the requests a callback yielded, before
    it in one pipelined round trip; Redis runs the take even when a push
    before it was refused (out of memory), so the parent's acknowledgement
    is not in that take: it goes with the next one, once its children are
    stored. Before this rule the out-of-memory crawl test saw a parent
    acknowledged with its children refused."""
    scheduler, crawler = _scheduler(module_redis_server.url, token())
    in_progress = crawler.engine._slot.inprogress
    leases = f"{scheduler.frontier.prefix}leases"
    try:
        scheduler.enqueue_request(scrapy.Request("http://127.0.0.1:9/parent"))
        parent = scheduler.next_request()
        assert parent is not None
        in_progress.add(parent)
        scheduler.enqueue_request(scrapy.Request("http://127.0.0.1:9/child"))
        runtime_of(crawler).gates.on_finished(parent)
        in_progress.discard(parent)  # the engine is done with the parent
        calls = scheduler.frontier.calls
        child = scheduler.next_request()  # carries the child's push: one round trip
        assert child is not None
        assert child.url.endswith("/child")
        assert scheduler.frontier.calls - calls == 1
        client = scheduler.link.client
        assert client.zcard(leases) == 2  # the parent not acknowledged yet
        in_progress.add(child)
        assert scheduler.next_request() is None  # nothing left: its take acknowledges
        assert client.zcard(leases) == 1
        assert crawler.stats.get_value("cdp_pool/cluster/acked") == 1
    finally:
        scheduler.close("finished")


def test_a_lease_lost_is_logged_with_its_request(
    module_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A renewal that finds a lease gone (it ran out: another worker may do
    the request again) names the request in its WARNING (before: only the
    lease's number, which a user cannot trace; found by a trial)."""
    scheduler, _ = _scheduler(module_redis_server.url, token())
    try:
        scheduler.enqueue_request(scrapy.Request("http://127.0.0.1:9/held"))
        held = scheduler.next_request()
        assert held is not None
        scheduler.link.client.delete(f"{scheduler.frontier.prefix}lease:1")  # as if it ran out
        with caplog.at_level(logging.WARNING):
            scheduler.held._renew_now()
        assert "the lease of <GET http://127.0.0.1:9/held> (1) expired" in caplog.text
    finally:
        scheduler.close("finished")


@pytest.mark.parametrize(("shards", "spare"), [(1, 3), (2, 0)])
def test_a_take_counts_on_the_free_slots_only_with_one_bucket(
    module_redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch, shards: int, spare: int
) -> None:
    """The ``spare`` a take sends (its worker starts that many more requests
    next, so open gates up to it wake nobody) is the engine's free slots less
    the one taken, with one bucket; with several it is 0, since the worker's
    next takes go round the buckets: a gate one take counted on, in one
    bucket, was left open with nobody woken while the next take went to
    another bucket (found by a trial against Redis, two buckets)."""
    settings = {
        "ADDONS": {Addon: 0},
        **cluster(module_redis_server.url, token(), CDP_POOL_CLUSTER_SHARDS=shards),
    }
    crawler = get_crawler(Spider, settings)
    scheduler = load_object(crawler.settings["SCHEDULER"]).from_crawler(crawler)
    assert scheduler.shards.count == shards
    monkeypatch.setattr(scrapy_internals, "free_download_slots", lambda crawler, most: 4)
    assert scheduler._spare() == spare


@pytest_twisted.ensureDeferred
async def test_a_request_asks_redis_whether_its_host_is_paused_once(
    module_redis_server: RedisServer, site: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real in-process worker's crawl (Lightpanda, the test site): of the
    download handler's pause checks (a rendered request's before its browser
    slot, once it has one and right before its navigation; a plain
    request's before its turn and right before its download) only the last
    asks Redis ("no pause?", a ``PTTL``), the others read what the worker
    knows; and that one is answered by the take that just handed the
    request out (its script read the pause) when it came within
    ``take_checks.FRESH_S`` of it, else by a ``PTTL``. Counted by a spy on
    ``Buckets.pause_left`` that calls through, and by the stat. Before: 3
    a rendered request, 2 a plain one; then 1 (a ``PTTL`` each)."""
    asked: list[str] = []
    real = Buckets.pause_left

    def counted(self: Buckets, host: str) -> float:
        asked.append(host)
        return real(self, host)

    monkeypatch.setattr(Buckets, "pause_left", counted)
    rendered = [
        scrapy.Request(site.url(f"/echo?rendered={n}"), meta={"cdp": True}) for n in range(4)
    ]
    plain = [scrapy.Request(site.url(f"/echo?plain={n}")) for n in range(3)]
    settings = cluster(module_redis_server.url, token(), CDP_POOL_RENDER_ALL=False)
    spider, crawler = await crawl(rendered + plain, settings)
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 7
    stats = crawler.stats.get_stats()
    # in the browser: 4 of the 7 (/echo's text/plain is a raw document)
    assert stats.get("cdp_pool/pages", 0) + stats.get("cdp_pool/documents_raw", 0) == 4, stats
    by_take = stats.get("cdp_pool/cluster/pause_checks_by_take", 0)
    assert len(asked) + by_take == 7, (asked, by_take)


def test_a_pause_check_stands_on_a_fresh_take_only(module_redis_server: RedisServer) -> None:
    """The check right before a navigation (``remaining``) asks Redis no
    ``PTTL`` when a take handed out a request of the host at most
    ``FRESH_S`` before (and says it was checked then), and asks it when that
    take is older, or was of another host; a pause written before the check
    (pushed to the worker) is seen either way."""
    crawler = get_crawler(
        Spider, {"ADDONS": {Addon: 0}, **cluster(module_redis_server.url, token())}
    )
    crawler.spider = crawler._create_spider()
    middleware = ClusterHostPauseMiddleware.from_crawler(crawler)
    link = middleware.link
    asked: list[str] = []
    real = link.shards.pause_left
    link.shards.pause_left = lambda host: asked.append(host) or real(host)  # type: ignore[method-assign]
    try:
        now = time.monotonic()
        link.take_checks.taken("fresh.example", now)
        link.take_checks.taken("stale.example", now - FRESH_S - 1)
        assert middleware.remaining("fresh.example") == 0
        assert (asked, middleware.checked_at) == ([], now)
        assert middleware.remaining("stale.example") == 0
        assert middleware.remaining("other.example") == 0
        assert asked == ["stale.example", "other.example"]
        assert middleware.checked_at > now
        link.shards.pause_host("fresh.example", 30)  # as another worker would
        deadline = time.monotonic() + 30
        while middleware.remaining("fresh.example") == 0:  # until its message comes
            assert time.monotonic() < deadline
        assert middleware.remaining("fresh.example") > 20
    finally:
        middleware.events.stop()
        link.client.close()
