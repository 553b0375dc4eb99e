"""Command-line flags of the embedded servers that follow from settings
(beyond the pool's own: port, connections, watchdog).

- ``CDP_POOL_MAX_MESSAGE_MB``: Lightpanda closes a CDP connection that sends a
  message over ``--cdp-max-message-size`` bytes (1 MiB by default, ``lightpanda
  help serve``); a request body goes base64-encoded in one message
  (``Fetch.continueRequest``'s ``postData``), so a POST of ~800 KB did not
  reach the site. The embedded servers take the setting's size.
- ``CDP_POOL_IGNORE_HTTPS_ERRORS``: Lightpanda's
  ``--insecure-disable-tls-host-verification``, Chromium's
  ``--ignore-certificate-errors`` (remote Chromium endpoints get
  ``Security.setIgnoreCertificateErrors`` per connection instead).
- ``--http-timeout``: Lightpanda gives up a transfer after 15 s by default
  (``lightpanda help serve``), so a page slower than that failed with
  ``net::ERR_TIMED_OUT`` whatever ``DOWNLOAD_TIMEOUT`` said (Chromium waited).
  The embedded servers take the larger of ``DOWNLOAD_TIMEOUT`` and
  ``CDP_POOL_NAVIGATION_TIMEOUT_SECONDS``: the plugin's own deadlines decide.
- Chromium's ``--disable-blink-features=AutomationControlled``: without it
  ``navigator.webdriver`` is true, a bot signal plain Scrapy does not give
  (Playwright passes the same flag).
"""

from __future__ import annotations

from scrapy_cdp_pool.config import PoolConfig


def max_message_bytes(config: PoolConfig) -> int:
    """The largest CDP message, in bytes, an embedded Lightpanda server takes."""
    return config.max_message_bytes


def http_timeout_ms(config: PoolConfig) -> int:
    """Lightpanda's ``--http-timeout`` (milliseconds per transfer): the larger
    of ``DOWNLOAD_TIMEOUT`` and the navigation timeout."""
    return int(1000 * max(config.download_timeout_s, config.navigation_timeout_s))


def lightpanda_flags(config: PoolConfig) -> list[str]:
    """Flags of ``lightpanda serve`` from the settings; a flag that
    ``CDP_POOL_LIGHTPANDA_ARGS`` sets itself is left to it."""
    own = {arg.split("=", 1)[0] for arg in config.lightpanda_args}
    flags: list[str] = []
    if "--cdp-max-message-size" not in own:
        flags += ["--cdp-max-message-size", str(max_message_bytes(config))]
    if "--http-timeout" not in own:
        flags += ["--http-timeout", str(http_timeout_ms(config))]
    if config.ignore_https_errors and "--insecure-disable-tls-host-verification" not in own:
        flags.append("--insecure-disable-tls-host-verification")
    return flags


def chromium_flags(config: PoolConfig) -> list[str]:
    """Flags of an embedded Chromium from the settings."""
    flags = ["--disable-blink-features=AutomationControlled"]
    if config.ignore_https_errors:
        flags.append("--ignore-certificate-errors")
    return flags
