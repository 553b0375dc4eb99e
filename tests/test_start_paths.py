"""File and directory settings that cannot be used are refused when the crawl
starts, by name (issue 12, item 9): the setting, the path and the OS's reason,
not a raw traceback from the component that opens them."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon

FILE_SETTINGS = ("CDP_POOL_STATUS_FILE", "CDP_POOL_FAILURES_FILE")
UNDER_A_FILE = "/etc/passwd/status.jsonl"  # unwritable even for root (mode bits are not)


def start(values: dict[str, object]) -> None:
    Addon().update_settings(Settings(values, priority="project"))


@pytest.mark.parametrize("name", FILE_SETTINGS)
def test_a_file_in_a_missing_directory_is_refused_by_name(name: str, tmp_path: Path) -> None:
    path = tmp_path / "missing" / "out.jsonl"
    with pytest.raises(ValueError, match=rf"{name}: '{path}' cannot be written") as refused:
        start({name: str(path)})
    assert "No such file or directory" in str(refused.value)


@pytest.mark.parametrize("name", FILE_SETTINGS)
def test_a_file_that_cannot_be_written_is_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match=rf"{name}: '{UNDER_A_FILE}' cannot be written") as refused:
        start({name: UNDER_A_FILE})
    assert "Not a directory" in str(refused.value)


@pytest.mark.parametrize("name", FILE_SETTINGS)
def test_a_directory_given_as_the_file_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=rf"{name}: .* cannot be written \(Is a directory\)"):
        start({name: str(tmp_path)})


@pytest.mark.parametrize("name", FILE_SETTINGS)
def test_a_writable_file_is_accepted(name: str, tmp_path: Path) -> None:
    start({name: str(tmp_path / "out.jsonl")})


def test_a_missing_profiles_directory_is_refused_by_name(tmp_path: Path) -> None:
    missing = tmp_path / "profiles"
    with pytest.raises(
        ValueError,
        match=rf"CDP_POOL_PROFILES_DIR: '{missing}' is not a directory \(No such file",
    ):
        start({"CDP_POOL_PROFILES_DIR": str(missing)})
    file = tmp_path / "a-file"
    file.write_text("")
    with pytest.raises(ValueError, match=r"CDP_POOL_PROFILES_DIR: .* is not a directory$"):
        start({"CDP_POOL_PROFILES_DIR": str(file)})
    missing.mkdir()
    start({"CDP_POOL_PROFILES_DIR": str(missing)})


def test_a_jobdir_that_cannot_be_created_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"JOBDIR: '/etc/passwd/job' cannot be created"):
        start({"JOBDIR": "/etc/passwd/job"})
