"""The settings table against PoolConfig, the add-on and the README's
settings tables. No browser, no site."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.settings import config as config_module
from scrapy_cdp_pool.settings import parse as parse_module
from scrapy_cdp_pool.settings import sections as sections_module
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.settings.sections import SECTIONS, BudgetConfig
from scrapy_cdp_pool.settings.table import BY_NAME, SETTINGS, SHARED_POOL_SETTINGS

#: the reference pages whose tables list every setting (docs/settings.md, and the
#: sections of subsystems with settings of their own: cluster, ladder...)
DOCS = Path(__file__).resolve().parents[2] / "docs"
#: PoolConfig attributes read from Scrapy's own settings, not from the table
SCRAPY_FIELDS = {
    "download_timeout_s",
    "download_timeout_set",
    "download_maxsize",
    "download_warnsize",
    "redirect_max_times",
    "download_fail_on_dataloss",
}
ROW = re.compile(r"^\| `(CDP_POOL_[A-Z0-9_]+)` \| (.*?) \| ", re.MULTILINE)


def documented() -> dict[str, str]:
    text = "\n".join(page.read_text(encoding="utf-8") for page in sorted(DOCS.glob("*.md")))
    rows = ROW.findall(text)
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), "a setting documented twice"
    return dict(rows)


def test_the_docs_list_exactly_the_declared_settings_with_their_defaults() -> None:
    docs = documented()
    assert sorted(docs) == sorted(BY_NAME)
    wrong = {
        name: (docs[name], setting.documented_default)
        for name, setting in BY_NAME.items()
        if docs[name] != setting.documented_default
    }
    assert not wrong


def config_attributes() -> set[str]:
    """PoolConfig's attributes, a section's as ``"section.name"``."""
    names = {f.name for f in dataclasses.fields(PoolConfig)} - set(SECTIONS)
    for section, cls in SECTIONS.items():
        names |= {f"{section}.{f.name}" for f in dataclasses.fields(cls)}
    return names


def test_every_config_attribute_is_declared_once_with_the_same_default() -> None:
    declared = [setting.field for setting in SETTINGS if setting.field is not None]
    assert len(declared) == len(set(declared))
    assert set(declared) | SCRAPY_FIELDS == config_attributes()
    # PoolConfig()'s defaults are what the table's defaults parse to
    assert PoolConfig.from_settings(Settings()) == PoolConfig()


def test_each_feature_reads_its_own_section_checked_as_it_is_made() -> None:
    config = PoolConfig.from_settings(
        Settings(
            {
                "CDP_POOL_CLUSTER_LEASE_SECONDS": 12,
                "CDP_POOL_HOST_RATE": 2,
                "CDP_POOL_BUDGET_MIN": 2,
                "CDP_POOL_RENDER": "auto",
            }
        )
    )
    assert config.cluster.lease_s == 12.0
    assert config.resilience.host_rate == 2.0
    assert (config.budget.min, config.budget.max) == (2, None)
    assert config.ladder.mode == "auto"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.cluster.lease_s = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"CDP_POOL_BUDGET_MAX: 2 .* CDP_POOL_BUDGET_MIN"):
        BudgetConfig(min=3, max=2)


def test_each_settings_parser_yields_its_config_attributes_type() -> None:
    # PoolConfig is built through a dict (one loop over the table), where mypy
    # cannot see that a parser's result fits its attribute: checked here, from
    # the annotations of both.
    names = {**vars(config_module), **vars(sections_module), **vars(parse_module)}
    fields = typing.get_type_hints(PoolConfig, names)
    for section, cls in SECTIONS.items():
        fields |= {f"{section}.{k}": v for k, v in typing.get_type_hints(cls, names).items()}
    wrong = {
        setting.name: (parsed, fields[setting.field])
        for setting in SETTINGS
        if setting.field is not None
        and (parsed := typing.get_type_hints(setting.kind.parse, names)["return"])
        != fields[setting.field]
    }
    assert not wrong


def test_shared_pool_settings_are_the_pool_s_own() -> None:
    assert [name for _, name in SHARED_POOL_SETTINGS] == [
        "CDP_POOL_ENDPOINTS",
        "CDP_POOL_BROWSER",
        "CDP_POOL_LIGHTPANDA_PATH",
        "CDP_POOL_LIGHTPANDA_ARGS",
        "CDP_POOL_CHROMIUM_PATH",
        "CDP_POOL_CHROMIUM_ARGS",
        "CDP_POOL_CONNECTIONS",
        "CDP_POOL_CONTEXTS_PER_CONNECTION",
        "CDP_POOL_DEDICATED_SERVERS",
        "CDP_POOL_SERVER_START_TIMEOUT_SECONDS",
        "CDP_POOL_CONNECT_TIMEOUT_SECONDS",
        "CDP_POOL_COMMAND_TIMEOUT_SECONDS",
        "CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS",
        "CDP_POOL_HTTP2",
        "CDP_POOL_SERVER_MEMORY_LIMIT_MB",
        "CDP_POOL_AUTOSCALE",
    ]


@pytest.mark.parametrize("priority", ["default", "addon", "project", "spider", "cmdline"])
def test_a_misspelt_setting_is_refused_at_start_with_the_closest_name(priority: str) -> None:
    settings = Settings()
    settings.set("CDP_POOL_CONECTIONS", 4, priority)
    with pytest.raises(
        ValueError, match=r"^CDP_POOL_CONECTIONS .*did you mean CDP_POOL_CONNECTIONS\?"
    ):
        Addon().update_settings(settings)


def test_an_unknown_setting_far_from_any_is_refused_by_name() -> None:
    settings = Settings({"CDP_POOL_ZZZ": 1, "OTHER_SETTING": 2})
    with pytest.raises(ValueError, match=r"^CDP_POOL_ZZZ is not a scrapy_cdp_pool setting"):
        PoolConfig.from_settings(settings)


@pytest.mark.parametrize("connections", [1025, 40_000])
def test_more_connections_than_one_browser_can_serve_are_refused_by_name(
    connections: int,
) -> None:
    # 40,000 was accepted and started Lightpanda with --cdp-max-connections
    # 80,000, which it refused ("range overflow"): the crawl ended
    # cdp_pool_unavailable with a message naming no setting
    settings = Settings({"CDP_POOL_CONNECTIONS": connections})
    with pytest.raises(ValueError, match=r"^CDP_POOL_CONNECTIONS: .* more than 1024 connections"):
        PoolConfig.from_settings(settings)
