"""Pause and resume a real ``scrapy crawl`` (subprocess, embedded Lightpanda,
several identities, page actions) with JOBDIR: stopped with SIGINT, or killed
with SIGKILL early, in the middle of a burst of new requests, and half-way; each
resumed until the crawl finishes. Items are compared as sets and counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.jobdir_project.harness import Job
from tests.profiles import token, write_profile
from tests.servers import SiteServer
from tests.site.jobsite import hub_of

PROFILES = ("ann", "bob", "cyd")


@pytest.fixture
def job(site: SiteServer, tmp_path: Path) -> Job:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    tag = token()
    names = [f"{name}-{tag}" for name in PROFILES]
    for name in names:
        write_profile(profiles, name, session=f"s-{name}")
    return Job(
        site, tmp_path, tag, total=0, hubs=4,
        settings={"PROFILES": ",".join(names), "CDP_POOL_PROFILES_DIR": str(profiles)},
    )  # fmt: skip


def expected_item(job: Job, n: int) -> dict[str, Any]:
    """What the item of page ``n`` shows: its identity's session, the page's
    JavaScript, and the results of its actions."""
    names = job.settings["PROFILES"].split(",")
    profile = names[n % len(names)] if n > job.hubs else None
    return {
        "n": n,
        "session": f"s-{profile}" if profile else "-",
        "js": str(2 * n),
        "profile": profile,
        "results": [None, str(2 * n)] if n % 4 == 0 else [],
    }


def check_items(job: Job, may_repeat: set[int]) -> None:
    items = job.items()
    counts = Counter(item["n"] for item in items)
    assert set(counts) == set(range(job.total))  # nothing lost
    repeated = {n for n, count in counts.items() if count > 1}
    assert repeated <= may_repeat, sorted(repeated - may_repeat)
    for item in items:
        assert item == expected_item(job, item["n"])


def check_identities(job: Job) -> None:
    """Each identity had one request in flight at a time, and none was left
    busy (the crawl finished)."""
    inflight_max = job.site.stats()["inflight_max"]
    for name in job.settings["PROFILES"].split(","):
        assert inflight_max[f"jobsite:{job.tag}:s-{name}"] == 1


def test_sigkill_anywhere_then_resume_loses_nothing_and_redoes_only_what_was_in_flight(
    job: Job,
) -> None:
    job.total = 120  # 240, then 160 before: the three kills need no more
    in_flight_at_kills: set[int] = set()

    # 1. During a burst: hub 1 yielded half its links, then is killed.
    run = job.start(HOLD_HUB="1")
    run.wait_for_item(key="hold")
    run.kill()
    queued, in_flight = job.stored()
    assert 1 in in_flight  # the hub is redone on resume...
    burst = [n for n in range(job.hubs + 1, job.total) if hub_of(n, job.hubs) == 1]
    assert 0 < len(set(burst) & (queued | in_flight | set(job.fetches()))) < len(burst)
    in_flight_at_kills |= in_flight

    # 2. Early: right after the resume's first item.
    run = job.start()
    run.wait_for_item(count=1)
    run.kill()
    in_flight_at_kills |= job.stored()[1]

    # 3. Half-way through what is left.
    run = job.start()
    run.wait_for_item(count=(job.total - len({item["n"] for item in job.items()})) // 2)
    run.kill()
    in_flight_at_kills |= job.stored()[1]

    run = job.start()
    run.finish()
    assert "Resuming crawl" in run.log()
    check_items(job, may_repeat=in_flight_at_kills)
    fetched_again = {n for n, count in job.fetches().items() if count > 1}
    assert fetched_again <= in_flight_at_kills  # no finished page was fetched again
    assert set(job.fetches()) == set(range(job.total))
    assert job.stored() == (set(), set())
    check_identities(job)


def test_sigint_then_resume_crawls_every_page_once(job: Job) -> None:
    job.total = 120
    run = job.start()
    run.wait_for_item(count=25)
    run.interrupt()
    assert "shutting down gracefully" in run.log()
    queued, in_flight = job.stored()
    assert queued
    assert not in_flight  # a clean stop finishes what it started
    assert len(job.items()) < job.total

    run = job.start()
    run.finish()
    assert "Resuming crawl" in run.log()
    check_items(job, may_repeat=set())
    assert job.fetches() == Counter(range(job.total))  # every page fetched once
    assert job.stored() == (set(), set())
    check_identities(job)
