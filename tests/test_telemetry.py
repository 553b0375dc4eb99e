"""Telemetry: status lines, JSON lines, stats and the memory guard, on real
crawls of the test site through real CDP servers."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_from_coro

from scrapy_cdp_pool import EngineStatusExtension, PoolConfig
from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
from scrapy_cdp_pool.render._request.session import RenderResult, render
from scrapy_cdp_pool.render._request.spec import RenderSpec
from scrapy_cdp_pool.telemetry import MemoryGuard, StatusSample
from scrapy_cdp_pool.telemetry.memory_guard import CLOSE_REASON, HOLD_REASON
from scrapy_cdp_pool.telemetry.status_file import read_status_file
from tests.crawl import crawl
from tests.servers import SiteServer

FIELDS = {f.name for f in dataclasses.fields(StatusSample)}
STATUS_LOGGER = "scrapy_cdp_pool.telemetry.extension"
GUARD_LOGGER = "scrapy_cdp_pool.telemetry.memory_guard"


def status_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == STATUS_LOGGER]


def read_samples(path: Path) -> list[dict[str, Any]]:
    samples, skipped = read_status_file(path)
    assert skipped == 0
    return samples


# Settings, without a crawler -------------------------------------------------


def test_settings_defaults() -> None:
    config = PoolConfig.from_settings(Settings())
    assert config.telemetry.status_interval_s == 30.0
    assert config.telemetry.status_file is None
    assert config.telemetry.server_memory_limit_mb is None


def test_settings_valid_values(tmp_path: Path) -> None:
    config = PoolConfig.from_settings(
        Settings({
            "CDP_POOL_STATUS_INTERVAL_SECONDS": "0.5",
            "CDP_POOL_STATUS_FILE": tmp_path / "status.jsonl",
            "CDP_POOL_SERVER_MEMORY_LIMIT_MB": "512",
        })
    )  # fmt: skip
    assert config.telemetry.status_interval_s == 0.5
    assert config.telemetry.status_file == str(tmp_path / "status.jsonl")
    assert config.telemetry.server_memory_limit_mb == 512.0


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("CDP_POOL_STATUS_INTERVAL_SECONDS", 0, "seconds > 0"),
        ("CDP_POOL_STATUS_INTERVAL_SECONDS", -1, "seconds > 0"),
        ("CDP_POOL_STATUS_INTERVAL_SECONDS", "often", "seconds > 0"),
        ("CDP_POOL_STATUS_FILE", 42, "file path"),
        ("CDP_POOL_SERVER_MEMORY_LIMIT_MB", 0, "megabytes > 0"),
        ("CDP_POOL_SERVER_MEMORY_LIMIT_MB", -100, "megabytes > 0"),
        ("CDP_POOL_SERVER_MEMORY_LIMIT_MB", "lots", "megabytes > 0"),
        ("CDP_POOL_SERVER_MEMORY_LIMIT_MB", True, "megabytes > 0"),
    ],
)
def test_invalid_settings_name_the_setting_value_and_what_is_allowed(
    name: str, value: Any, allowed: str
) -> None:
    with pytest.raises(ValueError, match=name) as error:
        PoolConfig.from_settings(Settings({name: value}))
    assert repr(value) in str(error.value)
    assert allowed in str(error.value)


def test_the_addon_installs_the_extension() -> None:
    from scrapy_cdp_pool import Addon

    settings = Settings()
    Addon().update_settings(settings)
    from scrapy.utils.misc import load_object

    extensions = {load_object(k): v for k, v in settings.getwithbase("EXTENSIONS").items()}
    assert extensions[EngineStatusExtension] == 500
    assert EngineStatusExtension.__module__ == "scrapy_cdp_pool.telemetry.extension"


# Real crawls -------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_embedded_server_status_lines_json_lines_and_stats(
    site: SiteServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    status_file = tmp_path / "status.jsonl"

    def then(spider: Any, response: Any) -> Any:
        # Scheduled while its parent response is in the scraper: active size > 0.
        yield scrapy.Request(site.url("/js?n=3&telemetry=child"), meta={"cdp": True})

    requests = [
        scrapy.Request(site.url(f"/js?n=3&telemetry={i}"), meta={"cdp": True}) for i in range(8)
    ]
    requests[0] = requests[0].replace(meta={"cdp": True, "then": then})
    spider, crawler = await crawl(
        requests,
        {
            "CDP_POOL_STATUS_INTERVAL_SECONDS": 0.2,
            "CDP_POOL_STATUS_FILE": str(status_file),
            "CONCURRENT_REQUESTS": 4,
        },
    )
    assert not spider.failures
    assert len(spider.responses) == 9

    samples = read_samples(status_file)
    lines = status_lines(caplog)
    assert len(lines) == len(samples)
    assert [s["event"] for s in samples].count("idle") == 1
    assert samples[-1]["event"] == "stop"
    assert [s["event"] for s in samples].count("stop") == 1
    for sample in samples:
        assert set(sample) == FIELDS
        assert 0 <= sample["active_downloads"] <= 4
        assert sample["concurrent_requests"] == 4
        assert sample["crawler_rss_mb"] > 0
        assert sample["identity_waiting_requests"] == 0
        if sample["server"] is not None:  # the pool starts on the first rendered request
            assert sample["server"] == "embedded"
            assert sample["server_kind"] == "lightpanda"
        if sample["pool_state"] == "ready":
            assert sample["server_memory_mb"] > 0
            assert sample["server_rss_mb"] > 0
            assert sample["server_memory_source"] in ("pss", "rss")
            assert sample["server_processes"] >= 1

    idle = next(s for s in samples if s["event"] == "idle")
    assert idle["server_memory_mb"] > 0
    assert idle["responses"] == 9
    assert idle["scheduler_requests"] == 0
    assert idle["scheduler_memory_requests"] == 0
    assert idle["scheduler_disk_requests"] is None  # no JOBDIR
    assert idle["scraper_active_size_bytes"] >= 0
    assert idle["scraper_max_active_size_bytes"] == 5_000_000
    assert idle["scraper_needs_backout"] is False
    assert idle["pool_state"] == "ready"
    assert idle["pages_in_flight"] == 0
    assert [c["connection"] for c in idle["connections"]] == [0, 1]
    assert all(c["state"] == "ready" for c in idle["connections"])
    [endpoint] = idle["endpoints"]
    assert endpoint["kind"] == "lightpanda"
    assert endpoint["connections"] == endpoint["connections_ready"] == 2

    stop = samples[-1]
    assert stop["server_memory_mb"] > 0  # read before the pool closes
    assert stop["scheduler_requests"] is None  # the spider is closed: no scheduler

    idle_line = next(line for line in lines if line.startswith("Status (idle)"))
    assert "downloads 0/4 active" in idle_line
    assert "server lightpanda (embedded)" in idle_line
    assert "per endpoint ws+unix:///" in idle_line  # its private socket

    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/server_rss_mb_max"] > 0
    assert stats["cdp_pool/crawler_rss_mb_max"] > 0
    assert 1 <= stats["cdp_pool/active_downloads_max"] <= 4
    assert 0 <= stats["cdp_pool/scheduler_requests_max"] <= 9
    assert stats["cdp_pool/scraper_active_size_bytes_max"] >= 1024  # Scrapy's minimum per response
    assert stats["cdp_pool/status_samples"] == len(samples) - 1  # the stop line comes after
    assert "cdp_pool/memory_guard/holds" not in stats


@pytest_twisted.ensureDeferred
async def test_remote_endpoint_memory_is_not_available_never_zero(
    site: SiteServer, lightpanda_endpoint: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    status_file = tmp_path / "status.jsonl"
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js?n=1&remote"), meta={"cdp": True})],
        {
            "CDP_POOL_ENDPOINTS": [lightpanda_endpoint],
            "CDP_POOL_STATUS_FILE": str(status_file),
            "CDP_POOL_SERVER_MEMORY_LIMIT_MB": 1,
        },
    )
    assert len(spider.responses) == 1
    started = [s for s in read_samples(status_file) if s["server"] is not None]
    assert started  # idle and stop at least
    for sample in started:
        assert sample["server"] == "remote"
        assert sample["server_kind"] == "lightpanda"
        assert sample["server_memory_mb"] is None
        assert sample["server_rss_mb"] is None
        assert sample["server_memory_source"] == "n/a"
        assert [e["endpoint"] for e in sample["endpoints"]] == [lightpanda_endpoint]
    assert any("server lightpanda (remote) memory n/a" in line for line in status_lines(caplog))
    stats = crawler.stats.get_stats()
    assert "cdp_pool/server_rss_mb_max" not in stats
    assert stats["cdp_pool/crawler_rss_mb_max"] > 0
    assert stats["cdp_pool/memory_guard/holds"] == 0
    warnings = [r.getMessage() for r in caplog.records if r.name == GUARD_LOGGER]
    assert warnings == [
        (
            "CDP_POOL_SERVER_MEMORY_LIMIT_MB = 1 MB is not enforced: the CDP server is remote "
            "(lightpanda) and its memory cannot be measured from here"
        )
    ]


@pytest_twisted.ensureDeferred
async def test_memory_guard_limit_below_the_idle_server_fails_by_name(
    site: SiteServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One request at a time: the first renders (the server's memory is not
    known before it starts), its follow-up reaches the downloader with the
    server over the 1 MB limit and is held; with no page open the server
    stays over it, so the guard says the limit is below the idle server
    (naming the setting and the figure), lets the held page go and closes
    the spider (before: the crawl stalled, then failed with "every
    connection busy")."""
    caplog.set_level(logging.INFO)
    status_file = tmp_path / "status.jsonl"

    def then(spider: Any, response: Any) -> Any:
        yield scrapy.Request(site.url("/js?n=1&guard=second"), meta={"cdp": True})

    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js?n=1&guard=first"), meta={"cdp": True, "then": then})],
        {
            "CONCURRENT_REQUESTS": 1,
            "DOWNLOAD_TIMEOUT": 60,
            "CDP_POOL_SERVER_MEMORY_LIMIT_MB": 1,
            "CDP_POOL_STATUS_INTERVAL_SECONDS": 60,
            "CDP_POOL_STATUS_FILE": str(status_file),
        },
    )
    assert not spider.failures, spider.failures
    assert [r.url for r in spider.responses] == [
        site.url("/js?n=1&guard=first"), site.url("/js?n=1&guard=second"),
    ]  # fmt: skip
    stats = crawler.stats.get_stats()
    assert stats["finish_reason"] == CLOSE_REASON
    assert stats["cdp_pool/memory_guard/holds"] == 1
    assert stats["cdp_pool/memory_guard/idle_mb"] > 1
    above = "is above CDP_POOL_SERVER_MEMORY_LIMIT_MB = 1 MB"
    held = [r for r in caplog.records if r.name == GUARD_LOGGER and above in r.getMessage()]
    assert len(held) == 1
    assert held[0].levelno == logging.WARNING
    [error] = [r for r in caplog.records if r.name == GUARD_LOGGER and r.levelno >= logging.ERROR]
    message = error.getMessage()
    assert message.startswith("CDP_POOL_SERVER_MEMORY_LIMIT_MB = 1 MB is below what the CDP "
                              "server uses with no page open")  # fmt: skip
    assert f"{stats['cdp_pool/memory_guard/idle_mb']:.1f} MB" in message
    assert not [r for r in caplog.records if "every connection" in r.getMessage()]


async def _render_one(pool: ConnectionPool, url: str) -> RenderResult:
    async with pool.lease() as lease:
        return await render(lease, RenderSpec(url=url))


@pytest_twisted.ensureDeferred
async def test_memory_guard_lets_waiting_pages_go_once_memory_is_back_under(
    site: SiteServer,
) -> None:
    """A real pool and server, no crawl: held while over the limit, a lease
    waits; back under the limit, it gets its slot and renders."""
    await deferred_from_coro(_hold_then_release(site.url("/js?n=2&guard=release")))


async def _hold_then_release(url: str) -> None:
    pool = ConnectionPool(PoolConfig(connections=1))
    guard = MemoryGuard(limit_mb=1)
    try:
        await pool.start()
        reading = guard.check(pool)
        assert reading is not None
        assert reading.memory is not None
        assert reading.memory.memory_mb > 1
        assert guard.held
        assert pool.holds == {HOLD_REASON}

        page = asyncio.ensure_future(_render_one(pool, url))
        # The pool has no event for "a lease is waiting": yield to the loop
        # (no time passes) until the lease shows in its queue.
        while pool.waiting == 0:  # noqa: ASYNC110
            await asyncio.sleep(0)
        assert not page.done()
        assert pool.pages_in_flight == 0

        guard.limit_mb = reading.memory.memory_mb * 100  # the server is now under the limit
        guard.check(pool)
        assert not guard.held
        assert pool.holds == frozenset()
        result = await page
        assert result.status == 200
        assert b"item-2" in result.body
        assert guard.holds == 1
        assert guard.held_s > 0
    finally:
        guard.stop()
        await pool.close()
