"""Settings are read once and refused by name when invalid (no crawler needed)."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon, PoolConfig
from scrapy_cdp_pool.config import default_connections


def config(**values: Any) -> PoolConfig:
    return PoolConfig.from_settings(Settings(values))


def test_defaults() -> None:
    cfg = config()
    assert cfg.browser == "lightpanda"
    assert cfg.endpoints == ()
    assert cfg.connections == default_connections() >= 2
    assert cfg.contexts_per_connection == 1
    assert cfg.render_all is False
    assert cfg.download_timeout_s == 180
    assert cfg.http_cache is True


def test_values_are_read() -> None:
    cfg = config(
        CDP_POOL_BROWSER="chromium", CDP_POOL_CONNECTIONS="3",
        CDP_POOL_ENDPOINTS="http://127.0.0.1:9222,ws://10.0.0.1:9222/devtools/browser/x",
        CDP_POOL_BLOCK_RESOURCES=["Image", "font"], CDP_POOL_RENDER_ALL="True",
        CDP_POOL_NAVIGATION_TIMEOUT_SECONDS=2.5,
    )  # fmt: skip
    assert cfg.browser == "chromium"
    assert cfg.connections == 3
    assert cfg.endpoints == ("http://127.0.0.1:9222", "ws://10.0.0.1:9222/devtools/browser/x")
    assert cfg.block_resources == {"image", "font"}
    assert cfg.render_all is True
    assert cfg.navigation_timeout_s == 2.5


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CDP_POOL_BROWSER", "firefox", "use one of lightpanda, chromium"),
        ("CDP_POOL_CONNECTIONS", 0, "integer >= 1"),
        ("CDP_POOL_CONNECTIONS", "many", "integer >= 1"),
        ("CDP_POOL_CONTEXTS_PER_CONNECTION", -1, "integer >= 1"),
        ("CDP_POOL_ENDPOINTS", ["localhost:9222"], "is not a CDP endpoint"),
        ("CDP_POOL_ENDPOINTS", [9222], "list of strings"),
        ("CDP_POOL_BLOCK_RESOURCES", ["pictures"], "are not resource types"),
        ("CDP_POOL_BLOCK_RESOURCES", ["document"], "cannot be blocked"),
        ("CDP_POOL_NAVIGATION_TIMEOUT_SECONDS", 0, "seconds > 0"),
        ("CDP_POOL_NAVIGATION_TIMEOUT_SECONDS", "soon", "seconds > 0"),
        ("CDP_POOL_WAIT_UNTIL", "networkidle", "use one of load, domcontentloaded"),
        ("CDP_POOL_RENDER_ALL", "maybe", "not a boolean"),
        ("CDP_POOL_CHROMIUM_PATH", 42, "not a path"),
        ("CDP_POOL_RETRY_BACKOFF_BASE_SECONDS", -1, "seconds > 0"),
        ("CDP_POOL_RETRY_BACKOFF_MAX_SECONDS", 0.5, "seconds >= CDP_POOL_RETRY_BACKOFF_BASE"),
        ("CDP_POOL_HOST_CONCURRENCY", 0, "integer >= 1, or None"),
        ("CDP_POOL_HOST_CONCURRENCY", 2.5, "integer >= 1, or None"),
        ("CDP_POOL_HOST_RATE", "fast", "number > 0, or None"),
        ("CDP_POOL_HOST_RATE", -3, "number > 0, or None"),
        ("CDP_POOL_FAILURES_FILE", 7, "not a file path"),
        ("CDP_POOL_HTTP_CACHE", "sometimes", "not a boolean"),
    ],
)
def test_bad_values_are_refused_by_name(name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=name) as error:
        config(**{name: value})
    assert message in str(error.value)
    shown = [value] + (list(value) if isinstance(value, list) else [])
    assert any(repr(v) in str(error.value) for v in shown)


def test_addon_refuses_a_bad_setting_at_start_up() -> None:
    settings = Settings({"CDP_POOL_CONNECTIONS": 0})
    with pytest.raises(ValueError, match="CDP_POOL_CONNECTIONS"):
        Addon().update_settings(settings)


def test_addon_refuses_a_non_asyncio_reactor() -> None:
    settings = Settings({"TWISTED_REACTOR": "twisted.internet.epollreactor.EPollReactor"})
    with pytest.raises(ValueError, match="AsyncioSelectorReactor"):
        Addon().update_settings(settings)


def test_addon_installs_handler_and_keeps_previous_as_fallback() -> None:
    settings = Settings()
    settings.set("DOWNLOAD_HANDLERS", {"https": "my.project.Handler"}, "project")
    Addon().update_settings(settings)
    handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
    assert handlers["http"] == handlers["https"] == "scrapy_cdp_pool.handler.CDPDownloadHandler"
    assert settings.getdict("CDP_POOL_FALLBACK_HANDLERS") == {
        "http": "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler",
        "https": "my.project.Handler",
    }


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"CDP_POOL_BROWSER": "chromium", "CDP_POOL_CHROMIUM_PATH": "/nonexistent/chromium"},
         "CDP_POOL_CHROMIUM_PATH: '/nonexistent/chromium' is not an executable"),
        ({"CDP_POOL_LIGHTPANDA_PATH": "/nonexistent/lightpanda"},
         "CDP_POOL_LIGHTPANDA_PATH: '/nonexistent/lightpanda' is not a file"),
    ],
)  # fmt: skip
def test_addon_refuses_a_missing_browser_binary_at_start_up(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Addon().update_settings(Settings(settings))
    # With endpoints, the pool starts no server: no binary is needed.
    Addon().update_settings(Settings({**settings, "CDP_POOL_ENDPOINTS": ["http://127.0.0.1:9"]}))


@pytest.mark.parametrize(
    ("name", "args", "flag"),
    [
        ("CDP_POOL_LIGHTPANDA_ARGS", ["--host", "0.0.0.0"], "--host"),  # noqa: S104
        ("CDP_POOL_LIGHTPANDA_ARGS", ["--port=9333"], "--port"),
        ("CDP_POOL_LIGHTPANDA_ARGS", "--log-level,info,--advertise-host,me", "--advertise-host"),
        ("CDP_POOL_LIGHTPANDA_ARGS", ["--unix-socket", "/run/x.sock"], "--unix-socket"),
        ("CDP_POOL_CHROMIUM_ARGS", ["--remote-debugging-address=::"], "--remote-debugging-address"),
        ("CDP_POOL_CHROMIUM_ARGS", ["--remote-debugging-port=9222"], "--remote-debugging-port"),
    ],
)  # fmt: skip
def test_flags_that_would_expose_a_server_are_refused_by_name(
    name: str, args: Any, flag: str
) -> None:
    with pytest.raises(ValueError, match=rf"{name}: '{flag}.*not allowed") as error:
        config(**{name: args})
    assert "this user" in str(error.value)


def test_other_server_flags_pass() -> None:
    cfg = config(
        CDP_POOL_LIGHTPANDA_ARGS=["--log-level", "info", "--watchdog-ms", "500"],
        CDP_POOL_CHROMIUM_ARGS=["--lang=fr"],
    )
    assert cfg.lightpanda_args == ("--log-level", "info", "--watchdog-ms", "500")
    assert cfg.chromium_args == ("--lang=fr",)


def test_addon_warns_when_scrapy_limits_starve_the_pool(caplog: pytest.LogCaptureFixture) -> None:
    """Scrapy's defaults (16, 8 per domain) feed 4 connections; 8 per domain
    leaves 12 connections starved, named in one warning; the project's
    CONCURRENT_REQUESTS itself is left as it is."""
    with caplog.at_level("WARNING", logger="scrapy_cdp_pool.addon"):
        Addon().update_settings(Settings({"CDP_POOL_CONNECTIONS": 4}))
        assert caplog.messages == []
        settings = Settings({"CDP_POOL_CONNECTIONS": 12})
        Addon().update_settings(settings)
    assert settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") == 8
    expected = (
        "CONCURRENT_REQUESTS_PER_DOMAIN = 8 is below the CDP pool's 12 slots "
        "(CDP_POOL_CONNECTIONS = 12): at most 8 pages render at once per site; "
        "set it to 24 (twice the slots) to keep the pool fed"
    )
    assert caplog.messages == [expected]
