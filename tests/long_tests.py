"""The suite's longest tests started first, and the tests that mostly wait
spread over the run, when pytest-xdist runs the suite.

pytest-xdist's ``worksteal`` gives each of the N workers a contiguous share of
the collected tests (the first ``n // N``, then half the rest, then the rest),
runs each share in order and lets an idle worker take tests from the end of
another's. Two orders matter on a machine with fewer cores than workers (the
README's ``-n 3`` on 2 cores), where the suite is CPU-bound:

- :data:`LONG_TESTS`, the long tests that keep a core busy, longest first,
  are moved to the start of the shares, dealt round-robin: a test of a minute
  that a worker reaches last is the suite's tail, the other workers having
  nothing left to take. Of the install tests only the first is moved: the
  others wait for its build of the distributions and download of their
  wheelhouse (their shared fixtures), so started beside it they held two
  more workers idle for that long.
- :data:`WAITING_TESTS`, tests of many seconds that mostly wait (pauses a
  site announced, timeouts, leases running out: under half a core), are dealt
  round-robin too but spread evenly through each share, at staggered places:
  when two or three workers wait at once a core sits idle. All at the start
  (as when they were in the first list) they left the machine 40-60% idle
  for two minutes of a 14-minute run.

The seconds are what each took in a suite run at ``-n 3`` on a quiet 2-core
machine (CPU per test from ``os.times()``, children included); only their
order matters. A test renamed or removed is simply not moved.
"""

from __future__ import annotations

import pytest

#: node id (without parameters' brackets for all of a test's cases) -> seconds
LONG_TESTS: dict[str, float] = {
    "tests/test_install.py::test_the_built_sdist_installs_with_lightpanda_and_crawls_on_the_default_backend": 70,
    "tests/test_hostile_pages_exit.py::test_hostile_pages_beside_normal_ones_every_request_ends_and_the_crawl_exits": 40,
    "tests/test_jobdir_crawl.py::test_sigkill_anywhere_then_resume_loses_nothing_and_redoes_only_what_was_in_flight": 26,
    # Chromium's renderer busy loading the 4 and 8 MiB pages (~10 CPU-s), not waiting
    "tests/test_big_pages.py::test_a_big_pages_dom_is_read_within_the_download_timeout_not_the_action_timeout": 14,
    "tests/test_cluster_crawl.py::test_a_worker_killed_mid_crawl_loses_nothing": 21,
    "tests/test_cluster_crawl.py::test_three_workers_fetch_every_page_once": 18,
    "tests/test_cluster_crawl.py::test_a_worker_stopped_cleanly_leaves_nothing_undone_or_done_twice": 18,
    "tests/test_jobdir_crawl.py::test_sigint_then_resume_crawls_every_page_once": 7,
}  # fmt: skip

#: node id (as above) -> seconds of one case; each uses under half a core
WAITING_TESTS: dict[str, float] = {
    "tests/test_cluster_crawl.py::test_redis_out_of_memory_mid_crawl_loses_nothing_and_does_nothing_twice": 25,
    "tests/test_cluster_politeness.py::test_a_wait_for_another_workers_start_is_not_part_of_the_download_timeout": 24,
    "tests/test_cluster_crawl.py::test_no_worker_reaches_a_host_inside_a_pause_another_announced": 21,
    "tests/test_cluster_poison.py::test_a_page_that_kills_every_worker_fails_by_name": 21,
    "tests/test_cluster_latency.py::test_no_distant_worker_reaches_a_host_inside_a_pause_another_announced": 20,
    "tests/test_resilience_storm.py::test_no_request_reaches_a_host_inside_a_pause_it_announced": 20,
    "tests/test_slow_pages.py::test_a_page_slower_than_lightpandas_own_transfer_timeout_loads": 17,
    "tests/test_browser_unresponsive.py::test_a_browser_stopped_at_a_deadline_is_named_unresponsive_and_retried": 15,
    "tests/test_profiles_proxy.py::test_profiles_sharing_the_only_dedicated_server_cannot_keep_it_from_another": 13,
    "tests/test_cluster_politeness.py::test_a_429_seen_by_one_worker_pauses_every_worker": 13,
    "tests/test_cluster_politeness.py::test_the_host_rate_holds_across_workers_at_the_site": 13,
    "tests/test_cluster_shards.py::test_a_crawl_spans_the_shards_each_page_once_one_request_per_profile": 12,
    "tests/test_cluster_shards.py::test_a_429_pauses_its_host_in_every_bucket": 12,
    "tests/test_resilience_faults.py::test_chromium_pages_waiting_on_the_network_still_time_out_and_are_retried": 16,
    "tests/test_error_classes.py::test_a_slow_browser_start_does_not_fail_the_first_request": 11,
    "tests/test_cluster_profiles.py::test_redis_unreachable_keeps_the_copy_read_and_fails_saves_by_name": 11,
    "tests/test_cluster_faults.py::test_a_worker_stalled_past_its_lease_does_not_start_the_request": 11,
    "tests/test_cluster_faults.py::test_a_worker_stalled_while_its_request_waits_in_the_browser_does_not_send_it": 10,
    "tests/test_cluster_budget.py::test_two_workers_share_one_bound": 10,
    "tests/test_cluster_profiles.py::test_two_workers_hand_an_identity_over": 9,
    "tests/test_cluster_faults.py::test_scrapy_crawl_exits_1_when_a_redis_error_stopped_a_cluster_worker": 9,
    "tests/test_slot_waits.py::test_a_request_waiting_behind_a_page_longer_than_its_timeout_renders": 7,
    "tests/test_live_page_crawls.py::test_a_page_left_open_is_closed_at_the_deadline_and_its_slot_freed": 7,
    "tests/test_live_page_crawls.py::test_a_live_page_keeps_its_profile_s_identity_until_closed": 7,
    "tests/test_page_downloads.py::test_a_download_the_page_starts_keeps_the_page": 5,
    "tests/test_cluster_redis_cluster.py::test_a_scrapy_redis_feed_key_in_another_hash_slot_is_read": 5,
}  # fmt: skip


def _seconds(item: pytest.Item, table: dict[str, float]) -> float | None:
    return table.get(item.nodeid.partition("[")[0])


def _spread(fill: list[pytest.Item], waiting: list[pytest.Item], at: float) -> list[pytest.Item]:
    """``waiting`` placed evenly among ``fill``, the first ``at`` (0 to 1) of
    a gap in."""
    merged = list(fill)
    gap = len(fill) / max(1, len(waiting))
    for j in reversed(range(len(waiting))):
        merged.insert(int(gap * (j + at)), waiting[j])
    return merged


def start_long_tests_first(items: list[pytest.Item], workers: int) -> None:
    """Reorder ``items`` in place: the long ones at the start of each of the
    ``workers`` shares worksteal makes, longest first, round-robin; the
    waiting ones spread through the shares, staggered from share to share."""
    if workers < 2:
        return

    def by_length(table: dict[str, float]) -> list[pytest.Item]:
        found = (i for i in items if _seconds(i, table) is not None)
        return sorted(found, key=lambda i: -(_seconds(i, table) or 0))

    long, waiting = by_length(LONG_TESTS), by_length(WAITING_TESTS)
    if not (long or waiting):
        return
    moved = {id(i) for i in (*long, *waiting)}
    rest = [i for i in items if id(i) not in moved]
    # worksteal's first shares: n // N, then (n - that) // (N - 1), ...
    sizes, left = [], len(items)
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    firsts: list[list[pytest.Item]] = [long[n::workers] for n in range(workers)]
    waits: list[list[pytest.Item]] = [waiting[n::workers] for n in range(workers)]
    ordered: list[pytest.Item] = []
    for n, size in enumerate(sizes):
        take = max(0, size - len(firsts[n]) - len(waits[n]))
        fill, rest = rest[:take], rest[take:]
        ordered += firsts[n] + _spread(fill, waits[n], (n + 1) / (workers + 1))
    items[:] = ordered + rest
