"""What the add-on installs for a durable JOBDIR, and what is refused by name."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.squeues import PickleFifoDiskQueue
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool import Addon, PoolConfig
from scrapy_cdp_pool.errors import JobdirError
from scrapy_cdp_pool.jobdir import DurableScheduler
from scrapy_cdp_pool.jobdir.store import DATABASE_NAME, JobStore

DURABLE = {
    "SCHEDULER": "scrapy_cdp_pool.jobdir.DurableScheduler",
    "DUPEFILTER_CLASS": "scrapy_cdp_pool.jobdir.DurableDupeFilter",
    "SCHEDULER_DISK_QUEUE": "scrapy_cdp_pool.jobdir.SqliteLifoQueue",
    "SCHEDULER_START_DISK_QUEUE": "scrapy_cdp_pool.jobdir.SqliteFifoQueue",
}


class ProjectDiskQueue(PickleFifoDiskQueue):  # type: ignore[misc,valid-type]
    """A project's own disk queue: not durable, refused by name."""


def installed(values: dict[str, object]) -> dict[str, object]:
    settings = Settings(values, priority="project")
    Addon().update_settings(settings)
    return {name: settings.get(name) for name in DURABLE}


def test_config_defaults_and_bad_values() -> None:
    config = PoolConfig.from_settings(Settings())
    assert (config.jobdir.durable, config.jobdir.fsync) == (True, False)
    config = PoolConfig.from_settings(Settings({"CDP_POOL_JOBDIR_FSYNC": "True"}))
    assert config.jobdir.fsync
    for name in ("CDP_POOL_JOBDIR_DURABLE", "CDP_POOL_JOBDIR_FSYNC"):
        with pytest.raises(
            ValueError, match=rf"{name}: 'maybe' is not a boolean; use True or False"
        ):
            PoolConfig.from_settings(Settings({name: "maybe"}))


def test_with_jobdir_the_durable_components_are_installed(tmp_path: Path) -> None:
    assert installed({"JOBDIR": str(tmp_path)}) == DURABLE


def test_a_breadth_first_project_gets_the_fifo_queue(tmp_path: Path) -> None:
    values = installed(
        {"JOBDIR": str(tmp_path), "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue"}
    )
    assert values["SCHEDULER_DISK_QUEUE"] == "scrapy_cdp_pool.jobdir.SqliteFifoQueue"
    values = installed({"JOBDIR": str(tmp_path), "SCHEDULER_START_DISK_QUEUE": None})
    assert values["SCHEDULER_START_DISK_QUEUE"] is None


@pytest.mark.parametrize(
    "values",
    [{}, {"CDP_POOL_JOBDIR_DURABLE": False}, {"SCHEDULER": "project.Scheduler"}],
    ids=["no JOBDIR", "durable off", "own scheduler"],
)
def test_otherwise_scrapy_s_own_are_kept(
    values: dict[str, object], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if values:
        values = {"JOBDIR": str(tmp_path), **values}
    with caplog.at_level(logging.WARNING):
        result = installed(values)
    assert result["DUPEFILTER_CLASS"] == "scrapy.dupefilters.RFPDupeFilter"
    assert result["SCHEDULER_DISK_QUEUE"] == "scrapy.squeues.PickleLifoDiskQueue"
    if "SCHEDULER" in values:
        assert "SCHEDULER is project.Scheduler" in caplog.text


def test_a_disk_queue_that_is_not_durable_is_refused_by_name(tmp_path: Path) -> None:
    crawler = get_crawler(
        settings_dict={
            "JOBDIR": str(tmp_path), **DURABLE,
            "SCHEDULER_DISK_QUEUE": f"{__name__}.ProjectDiskQueue",
        }
    )  # fmt: skip
    with pytest.raises(JobdirError, match=r"SCHEDULER_DISK_QUEUE: .*ProjectDiskQueue does not"):
        DurableScheduler.from_crawler(crawler)


def test_a_durable_queue_is_not_resumed_without_the_durable_jobdir(tmp_path: Path) -> None:
    store = JobStore(tmp_path / DATABASE_NAME)
    row = store.push("0", b"a request")
    store.close()
    off = {"JOBDIR": str(tmp_path), "CDP_POOL_JOBDIR_DURABLE": False}
    with pytest.raises(JobdirError, match=r"holds 1 requests queued by the durable JOBDIR") as e:
        installed(off)
    assert "CDP_POOL_JOBDIR_DURABLE = True" in str(e.value)
    store = JobStore(tmp_path / DATABASE_NAME)
    store.ack([row])  # nothing left: Scrapy's own JOBDIR may take it over
    store.close()
    assert installed(off)["SCHEDULER"] == "scrapy.core.scheduler.Scheduler"
