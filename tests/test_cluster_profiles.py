"""The cluster's shared profiles (issue 16, item 3) on a real redis-server:
save-back seen by another process, fencing, seeding, export, fleet health,
and real crawls of two workers handing an identity's state over."""

from __future__ import annotations

import json
import logging
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import redis
import scrapy
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool.cluster.profile_health import FleetHealthBook
from scrapy_cdp_pool.cluster.profile_hook import SharedProfilesMiddleware
from scrapy_cdp_pool.cluster.profile_store import (
    STALE_WRITES_STAT,
    ProfileStoreUnreachable,
    SharedProfiles,
    StaleProfileWrite,
    export_profiles,
)
from scrapy_cdp_pool.cluster.redis_client import connect
from tests.cluster_ops import PREFIX, run_worker, take_identity
from tests.crawl import RecordingSpider, crawl
from tests.latency_proxy import LatencyProxy
from tests.profiles import cookie, temp_files, token, write_profile
from tests.redis_server import RedisServer
from tests.servers import SiteServer

IDENTITY = {"userAgent": "Mozilla/5.0 (X11; Linux x86_64) Shared/1.0", "timezoneId": "Europe/Paris"}


def state_with(session: str) -> dict[str, object]:
    return {"cookies": [cookie("session", session)], "origins": []}


def seeded(redis_server: RedisServer, directory: Path, owner: str = "w1") -> SharedProfiles:
    # the worker's own client (connect(): no retries of redis-py's own; the test
    # helper's client retried a stopped Redis for ~10 s with backoff)
    client = connect(redis_server.url, 10)
    shared = SharedProfiles(client, PREFIX, owner=owner, directory=directory)
    shared.seed()
    return shared


def test_save_back_by_one_process_is_what_another_loads(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    write_profile(tmp_path, "alice", session="valid-alice")
    seeded(redis_server, tmp_path)
    before = run_worker(redis_server.url, "load", "alice")
    assert before["state"]["cookies"][0]["value"] == "valid-alice"

    token = take_identity(redis_server.client(), "alice", "worker-save")
    saved = run_worker(
        redis_server.url, "save", "alice", str(token), json.dumps(state_with("valid-alice.r1"))
    )
    assert saved == {"saved": [1, "worker-save"]}  # version 1, by the saving process

    after = run_worker(redis_server.url, "load", "alice")
    assert after["state"] == state_with("valid-alice.r1")


def test_a_stale_fencing_token_is_refused(
    redis_server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_profile(tmp_path, "alice", session="valid-alice")
    crawler = get_crawler()
    client = redis_server.client()
    shared = SharedProfiles(client, PREFIX, owner="a", directory=tmp_path, stats=crawler.stats)
    shared.seed()
    stale = take_identity(client, "alice", "a")
    current = take_identity(client, "alice", "b")  # a's lease expired; b took the identity
    with caplog.at_level(logging.WARNING), pytest.raises(StaleProfileWrite) as refused:
        shared.save_state("alice", state_with("from-a"), token=stale)
    assert (refused.value.token, refused.value.current) == (stale, current)
    assert "save-back refused (fencing)" in caplog.text
    assert "from-a" not in caplog.text  # never a value
    # In another process too, and the stored state is untouched.
    answer = run_worker(redis_server.url, "save", "alice", str(stale), json.dumps(state_with("x")))
    assert answer["current"] == current
    assert shared.fetch("alice").storage_state["cookies"][0]["value"] == "valid-alice"
    # The holder's own token writes.
    shared.save_state("alice", state_with("from-b"), token=current)
    assert shared.fetch("alice").storage_state == state_with("from-b")
    # A lock that is gone (expired, nobody took it since), or no token at all: refused.
    client.delete(f"{PREFIX}identity:alice")
    with pytest.raises(StaleProfileWrite) as gone:
        shared.save_state("alice", state_with("late"), token=current)
    assert gone.value.current is None
    with pytest.raises(StaleProfileWrite):
        shared.save_state("alice", state_with("no-token"))
    assert shared.fetch("alice").storage_state == state_with("from-b")
    assert crawler.stats.get_value(STALE_WRITES_STAT) == 3


def test_seed_once_then_export_0600(redis_server: RedisServer, tmp_path: Path) -> None:
    files = tmp_path / "profiles"
    files.mkdir()
    write_profile(files, "alice", session="valid-alice", identity=IDENTITY)
    write_profile(files, "bob", session="valid-bob")
    (files / "bad.json").write_text(json.dumps({"cookies": {"not": "a list"}}))
    first = SharedProfiles(redis_server.client(), PREFIX, owner="w1", directory=files)
    report = first.seed()
    assert (report.seeded, report.kept) == (["alice", "bob"], [])
    assert [e.name for e in report.errors] == ["bad"]
    assert first.names() == ["alice", "bob"]

    # A second worker, whose alice has another identity file: the store keeps its copy.
    other = tmp_path / "other"
    other.mkdir()
    write_profile(other, "alice", session="valid-alice", identity={"locale": "fr-FR"})
    second = SharedProfiles(redis_server.client(), PREFIX, owner="w2", directory=other)
    report = second.seed()
    assert (report.seeded, report.kept, report.differing) == ([], ["alice"], ["alice"])
    assert second.fetch("alice").identity == IDENTITY

    token = take_identity(redis_server.client(), "bob", "w2")
    second.save_state("bob", state_with("valid-bob.r1"), token=token)

    out = tmp_path / "exported"
    written = export_profiles(first, out)
    assert sorted(p.name for p in written) == ["alice.identity.json", "alice.json", "bob.json"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads((out / "bob.json").read_text()) == state_with("valid-bob.r1")
    assert json.loads((out / "alice.identity.json").read_text()) == IDENTITY
    assert temp_files(out) == []
    # By default, back into the worker's own CDP_POOL_PROFILES_DIR.
    export_profiles(first, names=["bob"])
    assert json.loads((files / "bob.json").read_text()) == state_with("valid-bob.r1")


def test_health_is_the_fleets(redis_server: RedisServer) -> None:
    crawlers = [get_crawler(), get_crawler()]

    def on(worker: int, *events: str) -> FleetHealthBook:
        """Worker ``worker`` records ``events`` (a failure's reason, or "ok")
        and waits until they are written."""
        c = crawlers[worker]
        book = FleetHealthBook(c.stats, 3, redis_server.client(), PREFIX, crawler=c)
        for event in events:
            book.succeeded("alice") if event == "ok" else book.failed("alice", event)
        book.close()
        return book

    on(0, "HTTP 403")
    on(1, "HTTP 403")
    on(0, "ok")  # a success anywhere resets the fleet's count
    on(1, "HTTP 429", "HTTP 429")
    assert on(0).pull("alice") is None
    one = on(0, "TimeoutError")  # the third in a row across the fleet
    reason = one.retired("alice")
    assert reason is not None
    assert reason.startswith("retired after 3 consecutive failures across the cluster")
    assert "last: TimeoutError" in reason
    two = on(1)
    assert two.retired("alice") is None  # until it reads the fleet's verdict
    two.adopt("alice", two.pull("alice"))
    assert two.retired("alice") == reason
    assert crawlers[1].stats.get_value("cdp_pool/profiles_retired") == 1


def test_a_profile_and_its_retirement_are_read_in_one_round_trip(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Before each request of a profile the worker reads the fleet's copy
    and its retirement: one round trip, counted as the exchanges through a
    proxy (no delay) between the worker's client and Redis. Before: two (the
    copy, then the retirement)."""
    write_profile(tmp_path, "alice", session="valid-alice")
    seeded(redis_server, tmp_path)
    proxy = LatencyProxy(str(redis_server.socket), delay_ms=(0.0, 0.0))
    client = redis.Redis.from_url(proxy.url)
    try:
        crawler = get_crawler()
        shared = SharedProfiles(client, PREFIX, owner="w", directory=tmp_path)
        health = FleetHealthBook(crawler.stats, 3, client, PREFIX, crawler=crawler)
        middleware = SharedProfilesMiddleware(crawler, shared, health)
        client.ping()  # connected: its handshake is not counted
        exchanges = proxy.chunks
        # what process_request runs in a thread before each request of the profile
        assert middleware._read("alice") is None  # in service
        assert proxy.chunks - exchanges == 2  # one request, one answer
        assert shared.load("alice").storage_state == state_with("valid-alice")
        redis_server.client().hset(f"{PREFIX}profile_health:alice", "retired", "by hand")
        assert middleware._read("alice") == "by hand"
    finally:
        client.close()
        proxy.stop()


@pytest.mark.parametrize("browser", ["lightpanda"])
@pytest_twisted.ensureDeferred
async def test_two_workers_hand_an_identity_over(
    site: SiteServer, redis_server: RedisServer, tmp_path: Path, browser: str
) -> None:
    """Worker 1 (files in its CDP_POOL_PROFILES_DIR) seeds the cluster and
    saves back the cookie /refresh set; worker 2 (no profile files) sends it
    on its next request of the profile. A request whose profile was taken by
    another worker before it started is not started and saves nothing. (The
    frontier's take locks the profile and gives the request its fencing
    token.)"""
    write_profile(tmp_path, "alice", session="valid-alice")
    client = redis_server.client()
    cluster = {"CDP_POOL_CLUSTER_REDIS_URL": redis_server.url, "CDP_POOL_CLUSTER_NAME": "test",
               "CDP_POOL_BROWSER": browser, "CDP_POOL_PROFILE_SAVE_STATE": True}  # fmt: skip

    meta = {"cdp_profile": "alice"}
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/refresh?w1"), meta=meta)],
        {**cluster, "CDP_POOL_PROFILES_DIR": str(tmp_path)},
    )
    assert not spider.failures
    assert crawler.stats.get_value("cdp_pool/profile/alice/state_saves") == 1

    spider, crawler = await crawl([scrapy.Request(site.url("/whoami?w2"), meta=meta)], cluster)
    assert not spider.failures
    whoami = json.loads(spider.by_url("/whoami").css("#server::text").get(""))
    assert whoami["cookies"] == {"session": "valid-alice.r1"}

    # Worker 2 again; after its take, its lease runs out and another worker
    # takes the profile before the page starts.
    meta = {"cdp_profile": "alice", "steal_identity": True}
    # a short lease: each delivery waits for the other worker's lock to run out;
    # one delivery (before: the default 3, each stolen the same way): the next
    # take hands it out poisoned, to fail by name without rendering
    steal = {"DOWNLOADER_MIDDLEWARES": {"tests.cluster_ops.StealIdentityMiddleware": 968},
             "CDP_POOL_CLUSTER_LEASE_SECONDS": 3, "CDP_POOL_CLUSTER_MAX_DELIVERIES": 1}  # fmt: skip
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/refresh?late"), meta=meta)], {**cluster, **steal}
    )
    # The launch check sees the lock's fencing token gone before the page
    # starts: the request is dropped, nothing is rendered nor saved back (the
    # fencing of a save-back already under way: test_a_stale_fencing_token_is_refused).
    # (each delivery of it is stolen again, until it is poisoned)
    assert [type(f.value).__name__ for f in spider.failures] == ["RequestPoisoned"]
    assert crawler.stats.get_value("cdp_pool/cluster/lease_lost_not_started") >= 1
    assert not spider.responses
    assert not crawler.stats.get_value("cdp_pool/profile/alice/state_saves")
    shared = SharedProfiles(client, PREFIX, owner="check")
    assert shared.fetch("alice").storage_state["cookies"][0]["value"] == "valid-alice.r1"


def test_redis_unreachable_keeps_the_copy_read_and_fails_saves_by_name(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    write_profile(tmp_path, "alice", session="valid-alice")
    shared = seeded(redis_server, tmp_path)
    token = take_identity(redis_server.client(), "alice", "w1")
    assert shared.fetch("alice").storage_state["cookies"][0]["value"] == "valid-alice"
    redis_server.stop()
    with pytest.raises(ProfileStoreUnreachable, match="the cluster's Redis did not answer"):
        shared.fetch("alice")
    assert shared.load("alice").storage_state["cookies"][0]["value"] == "valid-alice"
    with pytest.raises(ProfileStoreUnreachable, match="cannot be saved"):
        shared.save_state("alice", state_with("valid-alice.r1"), token=token)
    with pytest.raises(ProfileStoreUnreachable):
        shared.load("bob")  # never read: fails by name


def test_the_cluster_export_command_writes_the_shared_profiles(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """``scrapy-cdp-pool cluster export``: the fleet's profiles back to 0600
    files, from the command line (the URL could come from the environment)."""
    files = tmp_path / "profiles"
    files.mkdir()
    write_profile(files, "alice", session="valid-alice", identity=IDENTITY)
    write_profile(files, "bob", session="valid-bob")
    SharedProfiles(redis_server.client(), PREFIX, owner="w1", directory=files).seed()
    out = tmp_path / "exported"
    name = "test"  # PREFIX is key_prefix("test")
    done = subprocess.run(
        [sys.executable, "-m", "scrapy_cdp_pool.tools.cli", "cluster", "export", "--redis",
         redis_server.url, "--name", name, "--dir", str(out), "--profile", "alice"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["alice.identity.json", "alice.json"]
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


class StateLostSpider(RecordingSpider):
    """Records, with each failure, whether the worker had named the crawl's
    state lost by then."""

    named_at_failure: list[object] = []
    client: redis.Redis | None = None
    follow_up = ""

    def parse(self, response: scrapy.http.Response) -> Any:
        yield from super().parse(response)
        if response.meta.get("flush"):
            assert self.client is not None
            self.client.flushall()  # as a restart without persistence
            request = scrapy.Request(self.follow_up, meta={"cdp_profile": "alice"})
            yield self.prepare(request)

    def on_error(self, failure: Any) -> None:
        type(self).named_at_failure.append(
            self.crawler.stats.get_value("cdp_pool/cluster/state_lost")
        )
        super().on_error(failure)


@pytest_twisted.ensureDeferred
async def test_a_redis_that_lost_the_crawl_is_named_before_a_profile_it_lost(
    site: SiteServer, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Issue 39 item 7. Redis loses everything (FLUSHALL, as a restart without
    persistence) while a worker renders a profile's page; the page's callback
    yields another request of the profile. Before: it failed as
    ``ProfileFileError`` ("not in the cluster's profile store") before the
    state loss was named. Now the loss is named first (one ERROR,
    ``finish_reason`` ``cdp_pool_cluster_state_lost``)."""
    write_profile(tmp_path, "alice", session="valid-alice")
    client = StateLostSpider.client = redis_server.client()
    StateLostSpider.named_at_failure = []
    StateLostSpider.follow_up = site.url("/whoami?after")
    meta = {"cdp_profile": "alice", "flush": True}
    try:
        settings = {
            "CDP_POOL_CLUSTER_REDIS_URL": redis_server.url,
            "CDP_POOL_CLUSTER_NAME": token(),
            "CDP_POOL_PROFILES_DIR": str(tmp_path),
        }
        spider, crawler = await crawl(
            [scrapy.Request(site.url("/whoami?before"), meta=meta)],
            settings,
            spider_cls=StateLostSpider,
        )
    finally:
        client.close()
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == "cdp_pool_cluster_state_lost", (
        [str(f.value) for f in spider.failures],
        [r.url for r in spider.responses],
    )
    assert all(named == 1 for named in StateLostSpider.named_at_failure), (
        StateLostSpider.named_at_failure
    )


@pytest_twisted.ensureDeferred
async def test_a_page_that_changes_nothing_writes_no_save_back_and_no_health(
    site: SiteServer, redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real worker's crawls (Lightpanda, save-back on). A success resets the
    fleet's consecutive failures when the take read some (2, written by hand
    as another worker's); once the count is 0, a request of the profile that
    succeeds writes no health and, its page changing no cookie, no save-back
    (the state equals the copy read under its lock): counted by a spy on the
    health writes that calls through, and by the profile's stored version.
    Before: one health write and one save-back per request."""
    write_profile(tmp_path, "alice", session="valid-alice")
    writes: list[str] = []
    real = FleetHealthBook._write

    def counted(book: FleetHealthBook, name: str, why: str | None) -> Any:
        writes.append(name)
        return real(book, name, why)

    monkeypatch.setattr(FleetHealthBook, "_write", counted)
    client = redis_server.client()
    health = f"{PREFIX}profile_health:alice"
    client.hset(health, "consecutive_failures", 2)
    settings = {
        "CDP_POOL_CLUSTER_REDIS_URL": redis_server.url, "CDP_POOL_CLUSTER_NAME": "test",
        "CDP_POOL_PROFILE_SAVE_STATE": True, "CDP_POOL_PROFILES_DIR": str(tmp_path),
    }  # fmt: skip
    meta = {"cdp_profile": "alice"}

    spider, crawler = await crawl([scrapy.Request(site.url("/whoami?first"), meta=meta)], settings)
    assert not spider.failures, spider.failures
    assert writes == ["alice"]  # the fleet's 2 reset
    assert client.hget(health, "consecutive_failures") == b"0"
    version = client.hget(f"{PREFIX}profile:alice", "version")

    requests = [scrapy.Request(site.url(f"/whoami?n={n}"), meta=meta) for n in range(3)]
    spider, crawler = await crawl(requests, settings)
    assert not spider.failures, spider.failures
    assert len(spider.responses) == 3
    assert writes == ["alice"]  # none more
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/cluster/unchanged_profile_saves"] == 3, stats
    assert client.hget(f"{PREFIX}profile:alice", "version") == version
    assert client.hget(health, "uses") == b"4"  # the last 3 written at close
