"""Issue 40, item 7: a crawl the add-on refuses to start ends with one ERROR
line naming the setting or the cause, and exit status 1 (before: asyncio's
"Task exception was never retrieved" and a 20-line traceback). Real
``scrapy crawl`` runs in a subprocess (:mod:`tests.scrapy_command`); the
refusals come before any page, so no site is needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scrapy_command import run_crawl, write_project
from tests.servers import ROOT


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ('CDP_POOL_CONNECTIONS = "x"\n', "CDP_POOL_CONNECTIONS: 'x' is not an integer >= 1"),
        (
            'CDP_POOL_BROWSER = "chromium"\nCDP_POOL_CHROMIUM_PATH = "/nonexistent/chromium"\n',
            "CDP_POOL_CHROMIUM_PATH",
        ),
    ],
    ids=["invalid-value", "missing-binary"],
)
def test_a_refused_start_is_one_error_line_and_exit_status_1(
    tmp_path: Path, settings: str, message: str
) -> None:
    project = write_project(tmp_path, settings)
    run = run_crawl(project, [], env={"PYTHONPATH": str(ROOT)})
    assert run.returncode == 1, run.log[-3000:]
    assert "Task exception was never retrieved" not in run.log, run.log[-3000:]
    assert "Traceback" not in run.log, run.log[-3000:]
    [line] = run.error_records()
    assert "ERROR: The crawl cannot start: " in line
    assert message in line
