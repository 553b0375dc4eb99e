"""Server flags: Chromium's list switches are given once (it reads only the
last one); Lightpanda loads iframes only when its flags ask; CDP_POOL_HTTP2
off is each embedded backend's own flag, and refused for remote endpoints."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool.browser.pool.server_flags import (
    chromium_flags,
    lightpanda_flags,
    loads_iframes,
    merge_feature_lists,
)
from scrapy_cdp_pool.settings.config import PoolConfig


def test_each_list_switch_is_given_once_with_every_value_at_its_first_place() -> None:
    argv = [
        "chromium",
        "--disable-features=A,B",
        "--headless",
        "--enable-features=X",
        "--disable-features=B,C",
        "--enable-features=Y,X",
        "about:blank",
    ]
    assert merge_feature_lists(argv) == [
        "chromium",
        "--disable-features=A,B,C",
        "--headless",
        "--enable-features=X,Y",
        "about:blank",
    ]


def test_argv_without_list_switches_is_unchanged() -> None:
    assert merge_feature_lists(["chromium", "--headless"]) == ["chromium", "--headless"]


def test_iframes_load_only_when_the_flag_asks_for_them() -> None:
    assert not loads_iframes(())
    assert not loads_iframes(("--load-resources", "image"))
    assert loads_iframes(("--load-resources", "image", "--load-resources", "iframe"))
    assert loads_iframes(("--load-resources=iframe",))


def _config(**settings: object) -> PoolConfig:
    return PoolConfig.from_settings(Settings(settings))


def test_http2_off_gives_each_embedded_backend_its_own_flag() -> None:
    # Before: CDP_POOL_HTTP2 was an unknown setting, refused at start.
    off = _config(CDP_POOL_HTTP2=False)
    assert "--disable-http2" in chromium_flags(off)
    flags = lightpanda_flags(off)
    assert flags[flags.index("--http-version") + 1] == "1.1"
    default = _config()
    assert "--disable-http2" not in chromium_flags(default)
    assert "--http-version" not in lightpanda_flags(default)
    # a flag of the user's own wins
    own = _config(CDP_POOL_HTTP2=False, CDP_POOL_LIGHTPANDA_ARGS=["--http-version", "auto"])
    assert "--http-version" not in lightpanda_flags(own)


def test_http2_off_is_refused_by_name_with_remote_endpoints() -> None:
    with pytest.raises(ValueError, match=r"CDP_POOL_HTTP2 = False: .* CDP_POOL_ENDPOINTS"):
        _config(CDP_POOL_HTTP2=False, CDP_POOL_ENDPOINTS=["http://127.0.0.1:9222"])
