"""Settings are read once and refused by name when invalid (no crawler needed)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon, PoolConfig
from scrapy_cdp_pool.settings.config import default_connections


def config(**values: Any) -> PoolConfig:
    return PoolConfig.from_settings(Settings(values))


def test_connections_default_per_backend() -> None:
    """8 on the embedded Lightpanda; CPU cores (at least 2) on Chromium and on
    endpoints (issue 19's sweep, in docs/performance.md)."""
    cores = max(2, os.cpu_count() or 1)
    assert config().connections == 8
    assert config(CDP_POOL_BROWSER="chromium").connections == cores
    assert config(CDP_POOL_ENDPOINTS=["http://127.0.0.1:9222"]).connections == cores
    assert config(CDP_POOL_CONNECTIONS=3).connections == 3


def test_defaults() -> None:
    cfg = config()
    assert cfg.browser == "lightpanda"
    assert cfg.endpoints == ()
    assert cfg.connections == default_connections() >= 2
    assert cfg.contexts_per_connection == 1
    assert cfg.render_all is False
    assert cfg.download_timeout_s == 180
    assert cfg.max_message_mb == 256
    assert cfg.ignore_https_errors is False
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
        ("CDP_POOL_NAVIGATION_TIMEOUT_SECONDS", float("inf"), "finite number of seconds > 0"),
        ("CDP_POOL_CONNECT_TIMEOUT_SECONDS", float("nan"), "finite number of seconds > 0"),
        ("CDP_POOL_WAIT_UNTIL", "commit", "use one of load, domcontentloaded, networkidle"),
        ("CDP_POOL_RENDER_ALL", "maybe", "not a boolean"),
        ("CDP_POOL_IGNORE_HTTPS_ERRORS", "perhaps", "not a boolean"),
        ("CDP_POOL_CHROMIUM_PATH", 42, "not a path"),
        ("CDP_POOL_RETRY_BACKOFF_BASE_SECONDS", -1, "seconds > 0"),
        ("CDP_POOL_RETRY_BACKOFF_MAX_SECONDS", 0.5, "seconds >= CDP_POOL_RETRY_BACKOFF_BASE"),
        ("CDP_POOL_HOST_CONCURRENCY", 0, "integer >= 1, or None"),
        ("CDP_POOL_HOST_CONCURRENCY", 2.5, "integer >= 1, or None"),
        ("CDP_POOL_HOST_RATE", "fast", "number > 0, or None"),
        ("CDP_POOL_HOST_RATE", -3, "number > 0, or None"),
        ("CDP_POOL_FAILURES_FILE", 7, "not a file path"),
        ("CDP_POOL_MAX_MESSAGE_MB", 0, "megabytes > 0"),
        ("CDP_POOL_MAX_MESSAGE_MB", "big", "megabytes > 0"),
        ("CDP_POOL_CAPTURE_MAX_BODY_MB", -1, "megabytes >= 0"),
        ("CDP_POOL_CAPTURE_MAX_TOTAL_MB", "lots", "megabytes >= 0"),
        ("CDP_POOL_CAPTURE_MAX_BODY_MB", True, "megabytes >= 0"),
        ("CDP_POOL_BLOCK_URLS", ["re:("], "not a valid regex"),
        ("CDP_POOL_BLOCK_URLS", [3], "list of strings"),
        ("CDP_POOL_SNAPSHOT_MAX_COUNT", 0, "integer >= 1"),
        ("CDP_POOL_SNAPSHOT_MAX_MB", -2, "megabytes >= 0"),
        ("CDP_POOL_SNAPSHOT_DIR", 5, "not a file path"),
        ("CDP_POOL_INIT_SCRIPTS", 42, "not a list of JavaScript sources"),
        ("CDP_POOL_INIT_SCRIPTS", [""], "not JavaScript source or a .js path"),
        ("CDP_POOL_INIT_SCRIPTS", ["/no/such/dir/init.js"], "cannot be read"),
        ("CDP_POOL_HTTP_CACHE", "sometimes", "not a boolean"),
    ],
)
def test_bad_values_are_refused_by_name(name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=name) as error:
        config(**{name: value})
    assert message in str(error.value)
    shown = [value] + (list(value) if isinstance(value, list) else [])
    assert any(repr(v) in str(error.value) for v in shown)


def test_init_scripts_given_as_a_json_list_on_the_command_line_are_read_as_a_list(
    tmp_path: Any,
) -> None:
    """``-s 'CDP_POOL_INIT_SCRIPTS=["init.js"]'``: before, the whole string was
    one script (a valid array literal: nothing ran, the file was never read)."""
    script = tmp_path / "init.js"
    script.write_text("window.ran = 1;", encoding="utf-8")
    assert config(CDP_POOL_INIT_SCRIPTS=f'["{script}"]').init_scripts == ("window.ran = 1;",)
    kept = "[1, 2].forEach(n => window.n = n);"  # JavaScript starting with "[": one source
    assert config(CDP_POOL_INIT_SCRIPTS=kept).init_scripts == (kept,)
    with pytest.raises(ValueError, match="cannot be read"):
        config(CDP_POOL_INIT_SCRIPTS='["/no/such/dir/init.js"]')


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
    assert (
        handlers["http"] == handlers["https"] == "scrapy_cdp_pool.core.handler.CDPDownloadHandler"
    )
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
        # Chromium reads single-dash switches too (found by a fresh-user trial:
        # this one opened a port another local user could drive)
        ("CDP_POOL_CHROMIUM_ARGS", ["-remote-debugging-port=9333"], "-remote-debugging-port"),
        ("CDP_POOL_CHROMIUM_ARGS", ["-remote-debugging-pipe"], "-remote-debugging-pipe"),
        ("CDP_POOL_LIGHTPANDA_ARGS", ["-port=9333"], "-port"),
        ("CDP_POOL_LIGHTPANDA_ARGS", '["--port", "9222"]', "--port"),  # -s NAME='[...]'
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


def test_a_list_setting_given_as_a_json_string_is_read_as_json() -> None:
    """``-s 'CDP_POOL_LIGHTPANDA_ARGS=["--load-resources", "image"]'`` (before:
    split on commas, the server got ``["--load-resources"`` and exited)."""
    cfg = config(CDP_POOL_LIGHTPANDA_ARGS='["--load-resources", "image"]')
    assert cfg.lightpanda_args == ("--load-resources", "image")
    assert config(CDP_POOL_CHROMIUM_ARGS="--lang=fr,--mute-audio").chromium_args == (
        "--lang=fr",
        "--mute-audio",
    )
    with pytest.raises(ValueError, match=r"CDP_POOL_CHROMIUM_ARGS: .* is not one"):
        config(CDP_POOL_CHROMIUM_ARGS='["--lang=fr",')
    with pytest.raises(ValueError, match=r"CDP_POOL_CHROMIUM_ARGS: .* is not a list of strings"):
        config(CDP_POOL_CHROMIUM_ARGS="[1, 2]")


def test_server_flags_follow_the_settings() -> None:
    """Embedded servers' flags (pool/server_flags.py); a flag set in
    CDP_POOL_LIGHTPANDA_ARGS is left to it."""
    from scrapy_cdp_pool.browser.pool.server_flags import (
        chromium_flags,
        lightpanda_flags,
        lightpanda_response_cap,
    )

    # Lightpanda's own --http-timeout (15 s) cut slower pages whatever DOWNLOAD_TIMEOUT said;
    # DOWNLOAD_MAXSIZE was checked only once a document had loaded whole.
    assert lightpanda_flags(config()) == [
        "--cdp-max-message-size", str(256 << 20), "--http-timeout", "180000",
        "--http-max-response-size", str(1 << 30),
    ]  # fmt: skip
    cfg = config(
        CDP_POOL_MAX_MESSAGE_MB=8, CDP_POOL_IGNORE_HTTPS_ERRORS=True, DOWNLOAD_TIMEOUT=20,
        DOWNLOAD_MAXSIZE=5000,
    )  # fmt: skip
    assert lightpanda_flags(cfg) == [
        "--cdp-max-message-size", str(8 << 20), "--http-timeout", "30000",
        "--http-max-response-size", "5000", "--insecure-disable-tls-host-verification",
    ]  # fmt: skip
    assert lightpanda_response_cap(cfg) == (5000, "DOWNLOAD_MAXSIZE")
    assert "--ignore-certificate-errors" in chromium_flags(cfg)
    own = config(
        CDP_POOL_LIGHTPANDA_ARGS=[
            "--cdp-max-message-size", "99", "--http-timeout=5000", "--http-max-response-size", "77",
        ]
    )  # fmt: skip
    assert lightpanda_flags(own) == []
    assert lightpanda_response_cap(own) == (77, "CDP_POOL_LIGHTPANDA_ARGS")
    unlimited = config(DOWNLOAD_MAXSIZE=0)
    assert "--http-max-response-size" not in lightpanda_flags(unlimited)
    assert lightpanda_response_cap(unlimited) is None  # Lightpanda's own 1 GiB, nothing refused


def test_browser_behaviour_settings() -> None:
    cfg = config()
    assert (cfg.dialogs, cfg.page_heap_limit_mb, cfg.wait_until) == ("dismiss", 512, "load")
    cfg = config(CDP_POOL_DIALOGS="accept", CDP_POOL_PAGE_HEAP_LIMIT_MB="256",
                 CDP_POOL_WAIT_UNTIL="networkidle")  # fmt: skip
    assert (cfg.dialogs, cfg.page_heap_limit_mb, cfg.wait_until) == ("accept", 256, "networkidle")
    assert config(CDP_POOL_PAGE_HEAP_LIMIT_MB=0).page_heap_limit_mb is None


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("CDP_POOL_DIALOGS", "ignore", "use one of dismiss, accept"),
        ("CDP_POOL_PAGE_HEAP_LIMIT_MB", 8, "integer of megabytes >= 16"),
        ("CDP_POOL_PAGE_HEAP_LIMIT_MB", "lots", "integer of megabytes >= 16"),
        ("CDP_POOL_PAGE_HEAP_LIMIT_MB", 1.5, "integer of megabytes >= 16"),
        ("CDP_POOL_WAIT_UNTIL", "idle", "networkidle"),
    ],
)
def test_browser_behaviour_settings_refused_by_name(name: str, value: Any, expected: str) -> None:
    with pytest.raises(ValueError, match=name) as error:
        config(**{name: value})
    assert expected in str(error.value)
    assert repr(value) in str(error.value)


def test_heap_limit_arguments_per_backend() -> None:
    from scrapy_cdp_pool.browser.backends import CHROMIUM, LIGHTPANDA
    from scrapy_cdp_pool.browser.pool.heap_limit import heap_limit_args

    assert heap_limit_args(config(), LIGHTPANDA) == ["--v8-max-heap-mb", "512"]
    assert heap_limit_args(config(), CHROMIUM) == ["--js-flags=--max-old-space-size=512"]
    assert heap_limit_args(config(CDP_POOL_PAGE_HEAP_LIMIT_MB=0), CHROMIUM) == []
    # the user's own flag wins
    own = config(CDP_POOL_CHROMIUM_ARGS=["--js-flags=--expose-gc"])
    assert heap_limit_args(own, CHROMIUM) == []


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


def test_the_starved_pool_warning_speaks_of_one_page_as_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Found by a fresh-user trial: "at most 1 pages render at once"."""
    with caplog.at_level("WARNING", logger="scrapy_cdp_pool.addon"):
        Addon().update_settings(Settings({"CDP_POOL_CONNECTIONS": 2, "CONCURRENT_REQUESTS": 1}))
    assert any("at most 1 page renders at once;" in m for m in caplog.messages), caplog.messages
    assert not any("1 pages" in m for m in caplog.messages)
