"""Server flags: Chromium's list switches are given once (it reads only the
last one); Lightpanda loads iframes only when its flags ask."""

from __future__ import annotations

from scrapy_cdp_pool.browser.pool.server_flags import loads_iframes, merge_feature_lists


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
