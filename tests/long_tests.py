"""The suite's longest tests started first, one per xdist worker at a time.

pytest-xdist's ``worksteal`` gives each of the N workers a contiguous share of
the collected tests (the first ``n // N``, then half the rest, then the rest),
runs each share in order and lets an idle worker take tests from the end of
another's. A test of a minute or two that a worker reaches last is the
suite's tail: the other workers have nothing left to take. So the tests
below, longest first, are moved to the start of the shares, dealt round-robin
(the longest to share 0, the next to share 1 ...): they start at once, and
the short tests fill in around them.

Of the install tests only the first is moved: the others wait for its
build of the distributions and download of their wheelhouse (their shared
fixtures), so started beside it they held two more workers idle for that
long (76 s each in a loaded run, before the wheelhouse; its 70 s are the
build, the wheelhouse and the test at ``-n 0``, load ~4).

The seconds are what each took in a suite run at ``-n 3`` (load ~10:
``pytest --durations=100``); only their order matters. A test renamed or
removed is simply not moved.
"""

from __future__ import annotations

import pytest

#: node id (without parameters' brackets for all of a test's cases) -> seconds
LONG_TESTS: dict[str, float] = {
    "tests/test_hostile_pages_exit.py::test_hostile_pages_beside_normal_ones_every_request_ends_and_the_crawl_exits": 77,
    "tests/test_install.py::test_the_built_sdist_installs_with_lightpanda_and_crawls_on_the_default_backend": 70,
    "tests/test_cluster_politeness.py::test_a_429_seen_by_one_worker_pauses_every_worker": 48,
    "tests/test_resilience_storm.py::test_no_request_reaches_a_host_inside_a_pause_it_announced": 40,
    "tests/test_cluster_crawl.py::test_redis_out_of_memory_mid_crawl_loses_nothing_and_does_nothing_twice": 41,
    "tests/test_cluster_crawl.py::test_no_worker_reaches_a_host_inside_a_pause_another_announced": 41,
    "tests/test_cluster_latency.py::test_three_distant_workers_fetch_each_page_once_one_request_per_identity": 35,
    "tests/test_cluster_poison.py::test_a_page_that_kills_every_worker_fails_by_name": 33,
    "tests/test_cluster_politeness.py::test_a_wait_for_another_workers_start_is_not_part_of_the_download_timeout": 30,
    "tests/test_cluster_latency.py::test_no_distant_worker_reaches_a_host_inside_a_pause_another_announced": 30,
    "tests/test_disk_read_only.py::test_a_jobdir_disk_turned_read_only_stops_the_crawl_and_the_resume_loses_nothing": 27,
    "tests/test_cluster_profiles.py::test_save_back_by_one_process_is_what_another_loads": 25,
    "tests/test_cluster_profiles.py::test_two_workers_hand_an_identity_over": 25,
    "tests/test_jobdir_crawl.py::test_sigkill_anywhere_then_resume_loses_nothing_and_redoes_only_what_was_in_flight": 24,
    "tests/test_cluster_feed.py::test_three_redis_spider_workers_share_one_set_feed": 22,
    "tests/test_cluster_crawl.py::test_a_redis_restart_with_aof_loses_nothing": 22,
    "tests/test_jobdir_crawl.py::test_sigint_then_resume_crawls_every_page_once": 22,
    "tests/test_profiles_proxy.py::test_profiles_sharing_the_only_dedicated_server_cannot_keep_it_from_another": 22,
    "tests/test_cluster_crawl.py::test_a_worker_killed_mid_crawl_loses_nothing": 21,
}  # fmt: skip


def _seconds(item: pytest.Item) -> float | None:
    return LONG_TESTS.get(item.nodeid.partition("[")[0])


def start_long_tests_first(items: list[pytest.Item], workers: int) -> None:
    """Reorder ``items`` in place: the long ones at the start of each of the
    ``workers`` shares worksteal makes, longest first, round-robin."""
    if workers < 2:
        return
    long = sorted((i for i in items if _seconds(i) is not None), key=lambda i: -(_seconds(i) or 0))
    if not long:
        return
    rest = [i for i in items if _seconds(i) is None]
    # worksteal's first shares: n // N, then (n - that) // (N - 1), ...
    sizes, left = [], len(items)
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for n, item in enumerate(long):
        shares[n % workers].append(item)
    ordered: list[pytest.Item] = []
    for share, size in zip(shares, sizes, strict=True):
        take = max(0, size - len(share))
        ordered += share + rest[:take]
        rest = rest[take:]
    items[:] = ordered + rest
