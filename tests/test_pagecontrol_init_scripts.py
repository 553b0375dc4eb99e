"""Init scripts (``CDP_POOL_INIT_SCRIPTS``, ``meta["cdp_init_scripts"]``, issue 18
item 3) on both embedded backends: the page's own inline script sees what they
set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_twisted
import scrapy
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool.settings.config import PoolConfig
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = ["lightpanda", "chromium"]


def _seen(response: scrapy.http.Response) -> list[object]:
    value: list[object] = json.loads(response.css("#seen::text").get())
    return value


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_the_page_script_sees_what_the_setting_and_meta_scripts_set(
    site: SiteServer, browser: str, tmp_path: Path
) -> None:
    script_file = tmp_path / "second.js"
    script_file.write_text("window.__second = 'from-file';", encoding="utf-8")
    spider, _ = await crawl(
        [
            scrapy.Request(site.url("/pc/init?n=1"), meta={"cdp": True}),
            scrapy.Request(
                site.url("/pc/init?n=2"),
                meta={"cdp": True, "cdp_init_scripts": [str(script_file)]},
            ),
        ],
        {
            "CDP_POOL_BROWSER": browser,
            "CDP_POOL_INIT_SCRIPTS": ["window.__injected = 'from-setting';"],
        },
    )
    assert not spider.failures, spider.failures
    assert _seen(spider.by_url("n=1")) == ["from-setting", None]
    assert _seen(spider.by_url("n=2")) == ["from-setting", "from-file"]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_reused_page_does_not_keep_another_requests_init_script(
    site: SiteServer, browser: str
) -> None:
    # One connection, pages reused: the second request must not see the first's script.
    def then(spider: object, response: object) -> list[scrapy.Request]:
        return [scrapy.Request(site.url("/pc/init?n=after"), meta={"cdp": True})]

    spider, _ = await crawl(
        [scrapy.Request(
            site.url("/pc/init?n=with"),
            meta={"cdp": True, "cdp_init_scripts": ["window.__injected = 'x';"], "then": then},
        )],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_CONNECTIONS": 1, "CDP_POOL_REUSE_PAGES": True},
    )  # fmt: skip
    assert not spider.failures, spider.failures
    assert _seen(spider.by_url("n=with")) == ["x", None]
    assert _seen(spider.by_url("n=after")) == [None, None]


def test_a_missing_script_file_is_refused_at_start_by_name(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.js")
    crawler = get_crawler(settings_dict={"CDP_POOL_INIT_SCRIPTS": [missing]})
    with pytest.raises(ValueError, match=r"CDP_POOL_INIT_SCRIPTS: the script file .*nope\.js"):
        PoolConfig.from_settings(crawler.settings)


@pytest_twisted.ensureDeferred
async def test_a_bad_meta_value_fails_its_request_by_name(site: SiteServer) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/pc/init?n=bad"),
                        meta={"cdp": True, "cdp_init_scripts": ["/no/such/file.js"]}),
         scrapy.Request(site.url("/pc/init?n=bad2"),
                        meta={"cdp": True, "cdp_init_scripts": [42]}),
         scrapy.Request(site.url("/pc/init?n=good"), meta={"cdp": True})],
    )  # fmt: skip
    messages = sorted(str(f.value) for f in spider.failures)
    assert len(messages) == 2
    assert "n=bad>" in messages[0] or "n=bad>" in messages[1]
    assert all("meta['cdp_init_scripts']" in m for m in messages)
    assert any("/no/such/file.js" in m for m in messages)
    assert [r.url for r in spider.responses] == [site.url("/pc/init?n=good")]
