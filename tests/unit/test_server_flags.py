"""Chromium's list switches, given once (it reads only the last one)."""

from __future__ import annotations

from scrapy_cdp_pool.browser.pool.server_flags import merge_feature_lists


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
