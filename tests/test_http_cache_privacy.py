"""Scrapy's HTTP cache, wrapped by the add-on, is readable by the crawl's user
only: its entries hold cookies, request headers (a ``Proxy-Authorization``)
and a profile's pages.

Found by a fresh-user trial: Scrapy's filesystem storage writes 0644 files
under 0755 directories, and user ``nobody`` read a cached response and its
request's ``Proxy-Authorization``. The check as ``nobody`` needs root and
``runuser``; the mode checks run everywhere.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

SYSTEM_PYTHON = "/usr/bin/python3"
AS_NOBODY = os.geteuid() == 0 and shutil.which("runuser") and Path(SYSTEM_PYTHON).exists()


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user can enter (as a project's usually is), not
    pytest's 0700 tmp_path, under which nothing could be reached anyway."""
    path = Path(tempfile.mkdtemp(prefix="cdp-pool-test-cache-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


READ = """
import sys
try:
    open(sys.argv[1], "rb").read()
    print("read")
except OSError as e:
    print(type(e).__name__)
"""


def _read_as_nobody(path: Path) -> str:
    done = subprocess.run(
        ["runuser", "-u", "nobody", "--", SYSTEM_PYTHON, "-c", READ, str(path)],
        capture_output=True, text=True, timeout=60, cwd="/", check=True,
    )  # fmt: skip
    return done.stdout.strip()


@pytest.mark.parametrize("existing", [False, True])
@pytest_twisted.ensureDeferred
async def test_the_http_cache_is_private_to_the_crawls_user(
    site: SiteServer, open_dir: Path, existing: bool
) -> None:
    cache = open_dir / "httpcache"
    if existing:  # left by an earlier crawl, with the default umask's modes
        cache.mkdir(mode=0o755)
        cache.chmod(0o755)
    spider, _ = await crawl(
        [
            scrapy.Request(site.url("/js?n=2"), meta={"cdp": True}),
            scrapy.Request(site.url("/js?n=3")),
        ],
        {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(cache)},
    )
    assert len(spider.responses) == 2, spider.failures
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    entries = [p for p in cache.rglob("request_headers") if p.is_file()]
    assert len(entries) == 2  # both stored, the rendered and the plain one
    if AS_NOBODY:
        assert _read_as_nobody(entries[0]) == "PermissionError"
