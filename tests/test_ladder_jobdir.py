"""What the render ladder learned survives a JOBDIR resume (issue 17): a
second crawl on the same JOBDIR starts each kind on the rung the first
learned, and a crawl with a store of its own (``CDP_POOL_LADDER_STORE``,
the interface a cluster's store implements) loads and saves through it."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any, ClassVar

import pytest_twisted
import scrapy

from scrapy_cdp_pool.ladder.learner import KindState
from scrapy_cdp_pool.ladder.store import FILE_NAME
from tests.crawl import crawl
from tests.servers import SiteServer
from tests.test_ladder_crawl import LADDER, items_right, rendered, rungs_tried


class MemoryStore:
    """A ``LadderStore`` kept in a class attribute (what a cluster's shared
    store does over the network)."""

    saved: ClassVar[dict[str, KindState]] = {}
    loads: ClassVar[int] = 0

    def load(self) -> dict[str, KindState]:
        MemoryStore.loads += 1
        return dict(MemoryStore.saved)

    def save(self, state: dict[str, KindState]) -> None:
        MemoryStore.saved = dict(state)


def requests(site: SiteServer, n: int) -> list[scrapy.Request]:
    return [rendered(site, f"/ladder/{kind}/{n}") for kind in ("static", "script", "canvas")]


def by_kind(responses: list[scrapy.http.Response]) -> dict[str, list[str]]:
    return {r.url.rsplit("/", 2)[-2]: rungs_tried(r) for r in responses}


@pytest_twisted.ensureDeferred
async def test_learned_starts_survive_a_jobdir_resume(site: SiteServer, tmp_path: Path) -> None:
    settings: dict[str, Any] = {
        **LADDER,
        "JOBDIR": str(tmp_path / "job"),
        "CDP_POOL_RECHECK_FRACTION": 0,
    }
    first, _ = await crawl(requests(site, 1), settings)
    assert not first.failures, first.failures
    assert by_kind(first.responses) == {
        "static": ["http"], "script": ["http", "lightpanda"],
        "canvas": ["http", "lightpanda", "chromium"],
    }  # fmt: skip
    state = tmp_path / "job" / FILE_NAME
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    second, crawler = await crawl(requests(site, 2), settings)  # resumed
    assert not second.failures, second.failures
    assert all(items_right(r) for r in second.responses)
    assert by_kind(second.responses) == {
        "static": ["http"], "script": ["lightpanda"], "canvas": ["chromium"],
    }  # fmt: skip
    stats = crawler.stats.get_stats()
    assert "cdp_pool/ladder/changes" not in stats  # nothing new to learn
    host = site.url("").split("://")[1]
    assert stats[f"cdp_pool/ladder/learned/{host}/ladder/canvas/{{n}} parse"] == "chromium"


@pytest_twisted.ensureDeferred
async def test_a_store_of_its_own_is_loaded_and_saved(site: SiteServer) -> None:
    settings = {
        **LADDER,
        "CDP_POOL_LADDER_STORE": f"{__name__}.MemoryStore",
        "CDP_POOL_RECHECK_FRACTION": 0,
    }
    MemoryStore.saved, MemoryStore.loads = {}, 0
    first, _ = await crawl(requests(site, 3)[1:], settings)
    assert not first.failures, first.failures
    host = site.url("").split("://")[1]
    assert MemoryStore.saved == {
        f"{host}/ladder/script/{{n}} parse": KindState("lightpanda"),
        f"{host}/ladder/canvas/{{n}} parse": KindState("chromium"),
    }
    second, _ = await crawl(requests(site, 4)[1:], settings)
    assert by_kind(second.responses) == {"script": ["lightpanda"], "canvas": ["chromium"]}
    assert MemoryStore.loads == 2
