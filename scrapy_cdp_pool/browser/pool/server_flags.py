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
- ``DOWNLOAD_MAXSIZE``: Lightpanda's ``--http-max-response-size`` (1 GiB by
  default), so a main document streamed past it is cut while it arrives
  (Lightpanda ends the transfer and fails the navigation with
  ``ResponseTooLarge``) instead of being loaded whole first (measured: a
  200 MB chunked page took 11 s and 1.9 GB in the crawler before it was
  refused). It bounds every response of the page (scripts, XHR) too, as
  Lightpanda's flag does; ``DOWNLOAD_MAXSIZE = 0`` leaves Lightpanda's 1 GiB.
- ``CDP_POOL_HTTP2 = False``: Lightpanda's ``--http-version 1.1``, Chromium's
  ``--disable-http2``. Both negotiate HTTP/2 over TLS (ALPN) by default, and
  neither falls back to HTTP/1.1 on a ``421 Misdirected Request`` (measured
  on Lightpanda 1.0.2 and Chromium 156: the 421 is the response; Chromium
  asks once more over HTTP/2 first).
- Chromium's ``--disable-blink-features=AutomationControlled``: without it
  ``navigator.webdriver`` is true, a bot signal plain Scrapy does not give
  (Playwright passes the same flag).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from scrapy_cdp_pool.browser.backends import CHROMIUM, backend_of, sets_flag
from scrapy_cdp_pool.settings.config import PoolConfig

#: the largest values Lightpanda's flags take (``range overflow`` at start
#: past them, measured on the wheel's binary): ``--cdp-max-message-size`` is
#: an unsigned 32-bit count of bytes, ``--http-timeout`` a signed 32-bit
#: count of milliseconds (24.8 days)
LIGHTPANDA_MAX_MESSAGE_BYTES = (1 << 32) - 1
LIGHTPANDA_MAX_HTTP_TIMEOUT_MS = (1 << 31) - 1


def max_message_bytes(config: PoolConfig) -> int:
    """The largest CDP message, in bytes, an embedded Lightpanda server takes:
    ``CDP_POOL_MAX_MESSAGE_MB``, at most what its flag holds (4 GiB - 1; no
    message of ours comes near it)."""
    return min(config.max_message_bytes, LIGHTPANDA_MAX_MESSAGE_BYTES)


def http_timeout_ms(config: PoolConfig) -> int:
    """Lightpanda's ``--http-timeout`` (milliseconds per transfer): the larger
    of ``DOWNLOAD_TIMEOUT`` and the navigation timeout, at most what its flag
    holds (24.8 days: the plugin's own deadlines end a render first). Before,
    a ``DOWNLOAD_TIMEOUT`` past it kept Lightpanda from starting at all."""
    timeout_s = max(config.download_timeout_s, config.navigation_timeout_s)
    return min(int(1000 * timeout_s), LIGHTPANDA_MAX_HTTP_TIMEOUT_MS)


#: Lightpanda's own ``--http-max-response-size`` (bytes), ``lightpanda help serve``
LIGHTPANDA_DEFAULT_MAX_RESPONSE = 1 << 30


def lightpanda_response_cap(config: PoolConfig) -> tuple[int, str] | None:
    """The largest response, in bytes, the settings make a Lightpanda server
    started by the plugin take, and the setting it comes from:
    ``CDP_POOL_LIGHTPANDA_ARGS``' own ``--http-max-response-size`` if it
    gives one, else ``DOWNLOAD_MAXSIZE``; None when that is 0 (no limit
    asked: Lightpanda keeps its own 1 GiB,
    :data:`LIGHTPANDA_DEFAULT_MAX_RESPONSE`)."""
    own = _flag_value(config.lightpanda_args, "--http-max-response-size")
    if own is not None and own.strip().isdigit():
        return int(own), "CDP_POOL_LIGHTPANDA_ARGS"
    if config.download_maxsize:
        return config.download_maxsize, "DOWNLOAD_MAXSIZE"
    return None


def _flag_value(args: tuple[str, ...], flag: str) -> str | None:
    """The value the user's arguments give ``flag`` (``flag value`` or
    ``flag=value``), else None."""
    for index, arg in enumerate(args):
        name, _, value = arg.partition("=")
        if name == flag:
            if value or "=" in arg:
                return value
            return args[index + 1] if index + 1 < len(args) else None
    return None


def lightpanda_flags(config: PoolConfig) -> list[str]:
    """Flags of ``lightpanda serve`` from the settings; a flag that
    ``CDP_POOL_LIGHTPANDA_ARGS`` sets itself is left to it."""
    own = config.lightpanda_args
    flags: list[str] = []
    if not sets_flag(own, "--cdp-max-message-size"):
        flags += ["--cdp-max-message-size", str(max_message_bytes(config))]
    if not sets_flag(own, "--http-timeout"):
        flags += ["--http-timeout", str(http_timeout_ms(config))]
    if config.download_maxsize and not sets_flag(own, "--http-max-response-size"):
        flags += ["--http-max-response-size", str(config.download_maxsize)]
    if config.ignore_https_errors and not sets_flag(
        own, "--insecure-disable-tls-host-verification"
    ):
        flags.append("--insecure-disable-tls-host-verification")
    if not config.http2 and not sets_flag(own, "--http-version"):
        flags += ["--http-version", "1.1"]
    return flags


#: Lightpanda's log on stderr: its ``app`` scope (start-up errors, a page
#: past its heap ceiling) and its ``watchdog`` scope (a script it stopped, a
#: warning) and nothing else (per-page navigation notes and page errors are
#: not written): what :mod:`~scrapy_cdp_pool.browser.pool.lightpanda_reports` reads
#: and what a start-up error quotes (``lightpanda help serve``: filters apply
#: first to last, ``-all`` then ``+scope``)
LIGHTPANDA_LOG_FLAGS = (
    "--log-level",
    "warn",
    "--log-filter",
    "-all",
    "--log-filter",
    "+app",
    "--log-filter",
    "+watchdog",
)


def lightpanda_log_flags(config: PoolConfig) -> list[str]:
    """:data:`LIGHTPANDA_LOG_FLAGS`, unless ``CDP_POOL_LIGHTPANDA_ARGS`` sets
    its own ``--log-level`` or ``--log-filter`` (then a page stopped by the
    watchdog or past its heap ceiling may not be told by name)."""
    own = config.lightpanda_args
    if sets_flag(own, "--log-level") or sets_flag(own, "--log-filter"):
        return []
    return list(LIGHTPANDA_LOG_FLAGS)


def chromium_flags(config: PoolConfig) -> list[str]:
    """Flags of an embedded Chromium from the settings."""
    flags = ["--disable-blink-features=AutomationControlled"]
    if config.ignore_https_errors:
        flags.append("--ignore-certificate-errors")
    if not config.http2:
        flags.append("--disable-http2")
    return flags


def watchdog_ms(config: PoolConfig) -> int:
    """Lightpanda's ``--watchdog-ms``: half of ``DOWNLOAD_TIMEOUT``, at most its
    own default of 30 s, at least 0.5 s. The watchdog ends a page stuck in
    JavaScript (and closes its connection); a CDP timeout alone stops waiting
    but leaves the server's thread spinning."""
    return int(1000 * max(0.5, min(30.0, config.download_timeout_s / 2)))


#: the HTTP cache's directory in a Lightpanda server's private directory
HTTP_CACHE_DIR = "http-cache"


def http_cache_args(config: PoolConfig, private_dir: Path) -> list[str]:
    """``lightpanda serve``'s HTTP cache flags (``CDP_POOL_HTTP_CACHE``): a
    cache of subresources (scripts, styles, XHR) in the server's own private
    directory (mode 0700, removed with it), so each server, hence each
    dedicated server's proxy, has its own; none when the setting is off or
    ``CDP_POOL_LIGHTPANDA_ARGS`` names a ``--http-cache-dir`` itself.

    Lightpanda stores what the site's headers allow (measured on 1.0.2:
    ``no-store``, ``private``, ``no-cache``, ``max-age=0`` and responses with
    ``Set-Cookie`` are fetched every time; main documents are never taken from
    it) and keeps its own soft limit of 1,000 entries
    (``--http-cache-entry-limit``). It does not honour ``Vary: Cookie``:
    the page then answers such responses itself (see
    :attr:`ServerInfo.cache_ignores_cookies`)."""
    if not config.http_cache or sets_flag(config.lightpanda_args, "--http-cache-dir"):
        return []
    folder = private_dir / HTTP_CACHE_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    return ["--http-cache-dir", str(folder)]


CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # No connection the pages did not cause: no background services (update,
    # sync, safe browsing lists, field trials, domain reliability reports,
    # hyperlink pings), no crash reports (no dumps under $HOME either).
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-field-trial-config",
    "--disable-default-apps",
    "--disable-component-extensions-with-background-pages",
    "--disable-search-engine-choice-screen",
    "--no-service-autorun",
    "--no-pings",
    "--safebrowsing-disable-auto-update",
    "--disable-breakpad",
    "--disable-crash-reporter",
    # Measured with strace on Chromium 156, the flags above still left DNS
    # look-ups of accounts.google.com (its account list, at start),
    # update.googleapis.com (component updates) and clients2.google.com
    # (network time, off below: NetworkTimeServiceQuerying). The first two are
    # pointed at port 1, which Chromium refuses (ERR_UNSAFE_PORT) before any
    # connection is attempted.
    "--gaia-url=http://127.0.0.1:1/",
    "--component-updater=url-source=http://127.0.0.1:1/",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    # What browser automation passes (Playwright's defaults): no throttling of
    # pages that are never visible, no extensions or background features.
    "--disable-extensions",
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-ipc-flooding-protection",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--password-store=basic",
    # Site isolation, as /usr/bin/chromium has it by default: Debian's
    # chromium-headless-shell (the default binary where installed) runs a
    # frame of another site in its page's renderer without it (measured on
    # 156: no "iframe" target), so a cross-site frame looping forever stalled
    # its page's main thread (tests/test_cross_origin_frames.py); with it, the
    # shell gives such a frame a process of its own, as Chromium does.
    "--site-per-process",
    # One --disable-features only: Chromium reads the last one it is given.
    # BackForwardCache: a page kept for reuse goes to about:blank between
    # requests; the back-forward cache would keep each previous document alive.
    # SpareRendererForSitePerProcess: Chromium keeps one pre-started renderer
    # for the browser context that navigated last; with one context per pooled
    # connection each navigation found a spare made for another context, threw
    # it away and started a new one (52-68 renderer processes started for 40
    # pages on 4 connections, 0-6 without; the browser's CPU, exited renderers
    # included, 565-612 -> 437 ms/page).
    # RenderDocument: Chromium's internal choice of a new RenderFrameHost (the
    # browser's per-document frame object, with the per-frame helpers it
    # creates) for each cross-document navigation, where it used to reuse the
    # frame's own within the same site instance. Process, site instance and
    # browser context are the same either way: site isolation and what a page
    # can reach are unchanged; a kept page makes two navigations per request
    # (the URL, then about:blank), each creating and tearing down one. Measured
    # on Chromium 156, /products, 4 kept pages, two browsers run side by side
    # over 5 alternating blocks of 40 pages: browser tree CPU 262 -> 212 ms a
    # kept page (stopped and cleaned), 221 -> 184 ms a page navigated on.
    (
        "--disable-features=Translate,OptimizationHints,OptimizationHintsFetching,"
        "OptimizationGuideModelDownloading,OptimizationTargetPrediction,MediaRouter,"
        "DialMediaRouteProvider,PaintHolding,AutofillServerCommunication,"
        "CertificateTransparencyComponentUpdater,SafeBrowsingOnDemand,"
        "InterestFeedContentSuggestions,LensOverlay,GlobalMediaControls,NetworkTimeServiceQuerying,"
        "BackForwardCache,SpareRendererForSitePerProcess,RenderDocument"
    ),
)

#: Chromium switches that take a comma-separated list and of which Chromium
#: reads only the last one given
_LIST_SWITCHES = ("--disable-features=", "--enable-features=")


def merge_feature_lists(argv: list[str]) -> list[str]:
    """``argv`` with each of ``--disable-features=`` and
    ``--enable-features=`` given once, at its first place, holding every
    value given (in order, without repeats): Chromium reads only the last
    one, so a user's ``--disable-features=X`` in ``CDP_POOL_CHROMIUM_ARGS``
    would otherwise switch ours back on (the back-forward cache that page
    reuse's isolation relies on, the services that phone home)."""
    merged: list[str] = []
    lists: dict[str, list[str]] = {}
    for arg in argv:
        switch = next((s for s in _LIST_SWITCHES if arg.startswith(s)), None)
        if switch is None:
            merged.append(arg)
            continue
        if switch not in lists:
            lists[switch] = []
            merged.append(switch)  # its place; the values are filled in below
        values = lists[switch]
        values.extend(v for v in arg[len(switch) :].split(",") if v and v not in values)
    return [arg + ",".join(lists[arg]) if arg in lists else arg for arg in merged]


#: Lightpanda reads it at start (``strings`` on 1.0.2 shows it): without it,
#: every server looks up and calls its vendor's telemetry host
LIGHTPANDA_ENV = {"LIGHTPANDA_DISABLE_TELEMETRY": "true"}


def loads_iframes(lightpanda_args: tuple[str, ...]) -> bool:
    """Whether ``lightpanda serve`` with these extra flags loads ``<iframe>``
    documents: only with ``--load-resources iframe`` (Lightpanda 1.0.2,
    ``lightpanda serve --help``: it loads no sub-resource by default)."""
    return any(
        flag in ("--load-resources", "-load-resources") and value == "iframe"
        for flag, value in itertools.pairwise(lightpanda_args)
    ) or any(
        arg in ("--load-resources=iframe", "-load-resources=iframe") for arg in lightpanda_args
    )


#: the name :func:`start_settings` gives Lightpanda's ``--http-timeout``
TIMEOUTS_FLAG = (
    "DOWNLOAD_TIMEOUT / CDP_POOL_NAVIGATION_TIMEOUT_SECONDS (Lightpanda's --http-timeout, ms)"
)


def start_settings(config: PoolConfig) -> list[tuple[str, object]]:
    """What the embedded server of ``config``'s pool takes from the settings
    when it starts (its flags), each named by the settings it comes from:
    crawlers sharing that pool (``CDP_POOL_NAME``) must agree on them, as the
    server one crawler starts holds them for every other (found by a trial:
    a second crawler with a larger ``DOWNLOAD_MAXSIZE`` had every page fail
    on the first one's ``--http-max-response-size``, one with a longer
    ``DOWNLOAD_TIMEOUT`` timed out at the first one's ``--http-timeout``).
    Empty for remote endpoints (``CDP_POOL_ENDPOINTS``): nothing is started."""
    if config.endpoints:
        return []
    common: list[tuple[str, object]] = [
        ("CDP_POOL_IGNORE_HTTPS_ERRORS", config.ignore_https_errors),
        ("CDP_POOL_PAGE_HEAP_LIMIT_MB", config.page_heap_limit_mb),
    ]
    if backend_of(config) == CHROMIUM:
        images = "image" in config.block_resources  # --blink-settings=imagesEnabled=false
        return [*common, ('"image" in CDP_POOL_BLOCK_RESOURCES (a Chromium flag)', images)]
    return [
        *common,
        ("DOWNLOAD_MAXSIZE (Lightpanda's --http-max-response-size)", config.download_maxsize),
        (TIMEOUTS_FLAG, http_timeout_ms(config)),
        ("DOWNLOAD_TIMEOUT (Lightpanda's --watchdog-ms)", watchdog_ms(config)),
        (
            "CDP_POOL_MAX_MESSAGE_MB (Lightpanda's --cdp-max-message-size)",
            max_message_bytes(config),
        ),
        ("CDP_POOL_HTTP_CACHE", config.http_cache),
    ]
