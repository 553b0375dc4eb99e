"""Which document responses a page starts are downloads, and their names
(render/_page/downloads.py)."""

from __future__ import annotations

import pytest

from scrapy_cdp_pool.render._page.downloads import download_name, is_download


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (200, [("Content-Disposition", "attachment; filename=a.csv"),
               ("Content-Type", "text/csv")], True),
        (200, [("Content-Type", "application/octet-stream")], True),
        (200, [("Content-Type", "application/zip")], True),
        (200, [("Content-Type", "application/pdf")], True),
        (200, [("Content-Type", "text/html; charset=utf-8")], False),
        (200, [("Content-Type", "text/csv")], False),
        (200, [("Content-Type", "application/json")], False),
        (200, [("Content-Type", "application/ld+json")], False),
        (200, [("Content-Type", "image/svg+xml")], False),
        (200, [("Content-Disposition", "inline"), ("Content-Type", "text/plain")], False),
        (200, [], False),
        (204, [("Content-Type", "application/octet-stream")], False),
        (302, [("Location", "/x"), ("Content-Type", "application/zip")], False),
        (404, [("Content-Type", "application/zip")], False),
    ],
)  # fmt: skip
def test_is_download(status: int, headers: list[tuple[str, str]], expected: bool) -> None:
    assert is_download(status, headers) is expected


@pytest.mark.parametrize(
    ("url", "disposition", "name"),
    [
        ("http://a.test/r", 'attachment; filename="report.csv"', "report.csv"),
        ("http://a.test/r", "attachment; filename=plain.txt", "plain.txt"),
        ("http://a.test/r", "attachment; filename*=UTF-8''na%C3%AFve.txt", "naïve.txt"),
        ("http://a.test/r", 'attachment; filename="../../etc/passwd"', "passwd"),
        ("http://a.test/files/data%20set.zip?x=1", "attachment", "data set.zip"),
        ("http://a.test/", "", "download"),
    ],
)
def test_download_name(url: str, disposition: str, name: str) -> None:
    headers = [("Content-Disposition", disposition)] if disposition else []
    assert download_name(url, headers) == name
