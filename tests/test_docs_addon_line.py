"""Issue 40, item 5: the pages a user follows to set the plugin up show the
line that enables it (followed literally before, docs/cluster.md left it out:
``CDP_POOL_CLUSTER_REDIS_URL`` was ignored without a word, every request on
one worker)."""

from __future__ import annotations

import pytest

from tests.servers import ROOT

ADDON_LINE = 'ADDONS = {"scrapy_cdp_pool.Addon": 0}'


@pytest.mark.parametrize("page", ["index.md", "install.md", "cluster.md", "settings.md"])
def test_the_page_shows_the_line_that_enables_the_plugin(page: str) -> None:
    assert ADDON_LINE in (ROOT / "docs" / page).read_text(encoding="utf-8")
