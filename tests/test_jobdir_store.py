"""The durable JOBDIR's parts without a crawl: the SQLite store (transactions,
in flight, fingerprints, commits that outlive a SIGKILL), the disk queues
(order, every meta key of the plugin kept), and the priority queue's state
rebuilt from the rows when ``active.json`` was never written."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy.crawler import Crawler
from scrapy.pqueues import DownloaderAwarePriorityQueue, ScrapyPriorityQueue
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.core.gates import _TOKEN_META_KEY, gate_key
from scrapy_cdp_pool.core.queue import ProfileAwarePriorityQueue, _path_safe
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import JobdirError
from scrapy_cdp_pool.jobdir import JobStore, SqliteFifoQueue, SqliteLifoQueue
from scrapy_cdp_pool.jobdir.queues import serialize
from scrapy_cdp_pool.jobdir.recovery import recover_state
from scrapy_cdp_pool.jobdir.store import DATABASE_NAME, job_store
from scrapy_cdp_pool.profiles.middleware import SIGN_IN_RETRY_META_KEY


class Spider(scrapy.Spider):
    name = "unit"

    def parse_item(self, response: Any) -> None:
        pass


def make_crawler(jobdir: Path) -> Crawler:
    crawler = get_crawler(Spider, {"JOBDIR": str(jobdir), "ADDONS": {Addon: 0}})
    crawler.spider = crawler._create_spider()
    return crawler


def test_writes_outside_a_transaction_commit_at_once_inside_together(tmp_path: Path) -> None:
    store = JobStore(tmp_path / DATABASE_NAME)
    store.push("a/0", b"one")
    assert store.commits == 1

    def fail_after_writing() -> None:
        with store.transaction():
            assert store.add_fingerprint(b"fp")
            store.push("a/0", b"two")
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        fail_after_writing()
    with store.transaction():
        assert store.add_fingerprint(b"fp")  # the rollback forgot it
        assert not store.add_fingerprint(b"fp")
        store.push("a/0", b"three")
    assert store.commits == 2
    assert [row.data for row in store.rows()] == [b"one", b"three"]


def test_a_popped_row_stays_in_flight_until_acked_and_is_queued_again_on_resume(
    tmp_path: Path,
) -> None:
    store = JobStore(tmp_path / DATABASE_NAME)
    for data in (b"1", b"2", b"3"):
        store.push("q", data)
    first, _ = store.pop("q", lifo=True) or (0, b"")
    second, data = store.pop("q", lifo=True) or (0, b"")
    assert data == b"2"
    assert store.pending("q") == 1
    store.ack([first])
    store.close()

    store = JobStore(tmp_path / DATABASE_NAME)
    assert not store.created
    assert store.requeue_in_flight() == 1
    assert store.pending("q") == 2
    assert store.pop("q", lifo=False) == (1, b"1")
    assert store.pop("q", lifo=False) == (second, b"2")


def test_commits_outlive_a_sigkill(tmp_path: Path) -> None:
    """The process kills itself right after committing, without closing."""
    code = f"""
import os, signal
from pathlib import Path
from scrapy_cdp_pool.jobdir import JobStore
store = JobStore(Path({str(tmp_path / DATABASE_NAME)!r}))
with store.transaction():
    store.add_fingerprint(b"fp")
    store.push("q", b"request")
store.push("q", b"popped")
store.pop("q", lifo=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert proc.returncode == -9, proc.stderr
    store = JobStore(tmp_path / DATABASE_NAME)
    assert not store.add_fingerprint(b"fp")
    assert [(row.data, row.in_flight) for row in store.rows()] == [
        (b"request", False), (b"popped", True),
    ]  # fmt: skip


def test_a_newer_schema_is_refused_by_name(tmp_path: Path) -> None:
    JobStore(tmp_path / DATABASE_NAME).db.execute("PRAGMA user_version=99")
    with pytest.raises(JobdirError, match=r"schema 99"):
        JobStore(tmp_path / DATABASE_NAME)


PLUGIN_META: dict[str, Any] = {
    "cdp": True,
    "cdp_profile": "alice",
    "cdp_actions": [
        ["wait_for_selector", ".q", {"timeout": 3}],
        ["screenshot", {"full_page": True}],
    ],
    "cdp_wait_until": "domcontentloaded",
    "cdp_navigation_timeout": 12.5,
    "cdp_not_before": 1.8e9,
    "retry_times": 2,
    "dont_merge_cookies": True,
    "download_timeout": 30,
    "cdp_results": [None, b"\x89PNG", {"json": [1, "two"]}],
    "redirect_urls": ["http://a.test/old"],
    "redirect_reasons": [301],
    SIGN_IN_RETRY_META_KEY: True,
}


def test_queues_keep_order_and_every_meta_key_of_the_plugin(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path / "job")
    spider = crawler.spider
    assert isinstance(spider, Spider)
    lifo = SqliteLifoQueue.from_crawler(crawler, str(tmp_path / "job/requests.queue/x/0"))
    fifo = SqliteFifoQueue.from_crawler(crawler, str(tmp_path / "job/requests.queue/x/0s"))
    for i in range(3):
        request = scrapy.Request(
            f"http://a.test/{i}", callback=spider.parse_item, meta=PLUGIN_META, priority=i
        )
        lifo.push(request)
        fifo.push(request)
    assert (len(lifo), len(fifo)) == (3, 3)
    assert lifo.name == "x/0"
    popped = [lifo.pop() for _ in range(3)]
    assert [r.url for r in popped if r] == [f"http://a.test/{i}" for i in (2, 1, 0)]
    assert [r.url for r in (fifo.pop(), fifo.pop()) if r] == ["http://a.test/0", "http://a.test/1"]
    for request in popped:
        assert request is not None
        assert request.meta == PLUGIN_META
        assert request.callback == spider.parse_item
    assert lifo.pop() is None
    assert len(job_store(runtime_of(crawler)).in_flight) == 5


def test_a_request_that_cannot_be_stored_raises_value_error(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path / "job")
    queue = SqliteLifoQueue.from_crawler(crawler, str(tmp_path / "job/requests.queue/0"))
    with pytest.raises(ValueError, match=r"lambda"):
        queue.push(scrapy.Request("http://a.test/", meta={"parser": lambda x: x}))
    with pytest.raises(ValueError, match=r"is not an instance method"):
        serialize(scrapy.Request("http://a.test/", callback=lambda r: r), crawler.spider)
    assert len(queue) == 0
    assert list(job_store(runtime_of(crawler)).rows()) == []


def _requests() -> list[scrapy.Request]:
    future = time.time() + 3600
    return [
        scrapy.Request("http://a.test/1"),
        scrapy.Request("http://a.test/2", priority=5),
        scrapy.Request("http://b.test/1", meta={"cdp_profile": "alice"}),
        scrapy.Request("http://b.test/2", meta={"cdp_profile": "alice"}, priority=-3),
        scrapy.Request("http://b.test/3", meta={"cdp_profile": "bob@home"}),
        scrapy.Request("http://a.test/retry", meta={"cdp_not_before": future, "retry_times": 1}),
        scrapy.Request("http://a.test/start", meta={"is_start_request": True}),
        scrapy.Request("http://a.test/start2", meta={"is_start_request": True, "cdp": True}),
    ]


def test_the_identity_queue_state_is_rebuilt_from_the_rows_after_a_kill(tmp_path: Path) -> None:
    """Requests pushed and popped, then no close() (a kill): the state the
    queue would have written, rebuilt from the database; everything pops again."""
    crawler = make_crawler(tmp_path / "job")
    key = str(tmp_path / "job/requests.queue")
    pq = ProfileAwarePriorityQueue(
        crawler, SqliteLifoQueue, key, {}, start_queue_cls=SqliteFifoQueue
    )
    requests = _requests()
    for request in requests:
        pq.push(request)
    in_flight = pq.pop()
    assert in_flight is not None
    assert _TOKEN_META_KEY not in in_flight.meta  # no identity: no token
    pq.push(scrapy.Request("http://b.test/4", meta={"cdp_profile": "alice"}))
    expected = {gate: set(prios) for gate, prios in pq.close().items()}
    expected.setdefault(gate_key(in_flight), set()).add(-in_flight.priority)
    job_store(runtime_of(crawler)).close()

    crawler = make_crawler(tmp_path / "job")
    store = job_store(runtime_of(crawler))
    assert store.requeue_in_flight() == 1
    state = recover_state(store, ProfileAwarePriorityQueue)
    assert isinstance(state, dict)
    assert state == {gate: sorted(prios) for gate, prios in expected.items()}
    pq = ProfileAwarePriorityQueue(
        crawler, SqliteLifoQueue, key, state, start_queue_cls=SqliteFifoQueue
    )
    found = []
    for gate, queue in pq.pqueues.items():
        while (request := queue.pop()) is not None:
            assert gate_key(request) == gate
            found.append(request.url)
    assert sorted(found) == sorted([r.url for r in requests] + ["http://b.test/4"])


def test_rows_of_an_unknown_gate_directory_move_to_their_gate_now(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path / "job")
    store = job_store(runtime_of(crawler))
    request = scrapy.Request("http://c.test/", meta={"cdp_profile": "carol"})
    store.push("renamed-gate-dir/-2", serialize(request, crawler.spider))
    state = recover_state(store, ProfileAwarePriorityQueue)
    assert state == {"carol|c.test": [-2]}
    assert [row.queue for row in store.rows()] == [f"{_path_safe('carol|c.test')}/-2"]


def test_plain_priority_queue_state_and_other_queues_refused(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path / "job")
    store = job_store(runtime_of(crawler))
    for name in ("0", "-5", "-5s", "3s"):
        store.push(name, b"x")
    assert recover_state(store, ScrapyPriorityQueue) == [-5, 0, 3]
    with pytest.raises(JobdirError, match=r"SCHEDULER_PRIORITY_QUEUE: .*DownloaderAware"):
        recover_state(store, DownloaderAwarePriorityQueue)
