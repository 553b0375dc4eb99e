"""Lightpanda's stderr lines about one page, as Lightpanda 1.0.2 writes them
(copied from a real server's stderr: logfmt quotes a value holding ``=``, as
a URL with a query string does)."""

from __future__ import annotations

import pytest_twisted

from scrapy_cdp_pool.browser.pool.lightpanda_reports import (
    HEAP_LIMIT,
    SCRIPT_STALL,
    LightpandaReports,
    Report,
)

STALL = (
    b'$time=1796107743699 $scope=watchdog $level=warn $msg="watchdog stall script" $page=2 '
    b'stalled_ms=4968 url="http://127.0.0.1:34979/busy-loop?watchdog=dbfb828deb" '
    b'page_url="http://127.0.0.1:34979/busy-loop?watchdog=dbfb828deb" interrupt_delay_ms=0 '
    b'stack="; <anonymous> (http://127.0.0.1:34979/busy-loop?watchdog=dbfb828deb:1:1)"\n'
)
HEAP = (
    b'$time=1796107631723 $scope=app $level=error $msg="JS heap limit script" $page=12 '
    b"url=http://127.0.0.1:46399/hog page_url=http://127.0.0.1:46399/hog "
    b'stack="; <anonymous> (http://127.0.0.1:46399/hog:1:2)"\n'
)
HEAP_NO_URL = (
    b'$time=1796107631712 $scope=app $level=error $msg="JS heap limit reached" $page=12 '
    b"initial_limit=60817408 current_limit=60817408 tearing_down=false\n"
)
OTHER = b'$time=1 $scope=app $level=fatal $msg="server run error" err=Unexpected\n'


def test_each_report_is_read_with_its_unquoted_url() -> None:
    reports = LightpandaReports()
    for line in (STALL, HEAP, HEAP_NO_URL, OTHER):
        reports.note_stderr_line(line)
    assert list(reports._reports) == [
        Report(SCRIPT_STALL, "http://127.0.0.1:34979/busy-loop?watchdog=dbfb828deb", 4968),
        Report(HEAP_LIMIT, "http://127.0.0.1:46399/hog"),
        Report(HEAP_LIMIT, ""),
    ]


@pytest_twisted.ensureDeferred
async def test_a_render_is_told_about_its_own_page_only() -> None:
    reports = LightpandaReports()
    reports.note_stderr_line(STALL)
    mine = await reports.reported(
        {"http://127.0.0.1:34979/busy-loop?watchdog=dbfb828deb"}, wait_s=0
    )
    assert mine is not None
    assert mine.kind == SCRIPT_STALL
    assert await reports.reported({"http://127.0.0.1:1/else"}, wait_s=0) is None


@pytest_twisted.ensureDeferred
async def test_a_servers_reports_are_its_own() -> None:
    mine, other = LightpandaReports(), LightpandaReports()
    other.note_stderr_line(STALL)  # the same URL, on another server
    url = "http://127.0.0.1:34979/busy-loop?watchdog=dbfb828deb"
    assert await mine.reported({url}, wait_s=0) is None
