"""Scrapy's handler test classes (the base classes of Scrapy's
``tests/utils/bases/download_handlers_http.py``, with the capability flags of
Scrapy's ``tests/test_downloader_handler_twisted_http11.py``) for
``CDPDownloadHandler`` with every request rendered.

A backend's test module calls :func:`suite_classes` with its name and the name
of its CDP server fixture, and binds the classes it returns in its namespace.
Every request is rendered (``CDP_POOL_RENDER_ALL``): a test that cannot pass by
design is marked from :data:`tests.scrapy_suite.allowed.ALLOWED`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy.utils.test import get_crawler as scrapy_get_crawler

from scrapy_cdp_pool import CDPDownloadHandler
from tests.crawl import hold_pool, release_held
from tests.scrapy_suite import ensure_keys, install
from tests.scrapy_suite.allowed import SHORT_DOWNLOAD_TIMEOUT, WAITS_OUT_THE_TIMEOUT, allowed_reason

install()
ensure_keys()

with warnings.catch_warnings():
    # as Scrapy's pyproject.toml: twisted.web.static warns on import
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="twisted.web.static")
    import tests.mockserver.http as mock_http  # the vendored one, once installed
    import tests.mockserver.mitm_proxy as mock_mitm_proxy
    import tests.mockserver.proxy_echo as mock_proxy_echo
    import tests.mockserver.simple_https as mock_simple_https
    import tests.utils.bases.download_handlers_http as bases

#: Scrapy's pyproject.toml filters of the sockets the asyncio reactor leaves
#: open on teardown, for the test modules' ``pytestmark``
FILTERWARNINGS = [
    pytest.mark.filterwarnings(
        "ignore:.*<socket\\.socket fd=:pytest.PytestUnraisableExceptionWarning"
    ),
    pytest.mark.filterwarnings("ignore:unclosed <socket\\.socket fd=:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:unclosed transport <:ResourceWarning"),
    # Scrapy 2.19's TestSimpleHttpsBase and TestHttpProxyBase fixtures, on pytest 9
    pytest.mark.filterwarnings("ignore::pytest.PytestRemovedIn10Warning"),
]

#: what every crawler of the suite runs with, beside the test's own settings
SUITE_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_cdp_pool.Addon": 0},
    "CDP_POOL_RENDER_ALL": True,
    # plain Scrapy does not verify certificates (the tests' are self-signed)
    "CDP_POOL_IGNORE_HTTPS_ERRORS": True,
    "CDP_POOL_CONNECTIONS": 1,
    # a request that would hang fails well before pytest-timeout (Scrapy: 180 s),
    # once (the crawls of TestHttpWithCrawler would retry it twice); the tests
    # that time out on purpose set their own download_timeout
    "DOWNLOAD_TIMEOUT": 15,
    "RETRY_ENABLED": False,
}


def route_mock_servers() -> None:
    """Scrapy's mock servers start through :mod:`tests.scrapy_suite.serve`
    (on 127.0.0.1, with the vendored ``tests`` installed)."""
    for cls in (mock_http.MockServer, mock_simple_https.SimpleMockServer,
                mock_proxy_echo.ProxyEchoMockServer):  # fmt: skip
        if cls.__dict__.get("_routed"):
            continue
        module, arguments = cls.module_name, cls.get_additional_args

        def get_additional_args(self: Any, module: str = module, arguments: Any = arguments) -> Any:
            return [module, *arguments(self)]

        cls.module_name = "tests.scrapy_suite.serve"  # type: ignore[misc]
        cls.get_additional_args = get_additional_args  # type: ignore[method-assign]
        cls._routed = True  # type: ignore[attr-defined]


route_mock_servers()


@pytest.fixture(scope="session")
def mockserver() -> Iterator[Any]:
    """Scrapy's mock server (its conftest's fixture)."""
    with mock_http.MockServer() as server:
        yield server


@pytest.fixture(scope="session")
def _mitm_proxies() -> Iterator[dict[str, tuple[Any, str]]]:
    """Scrapy's conftest's mitmdump processes, one a proxy kind, for the session."""
    proxies: dict[str, tuple[Any, str]] = {}
    try:
        yield proxies
    finally:
        for proxy, _url in proxies.values():
            proxy.stop()


@pytest.fixture  # function scope: it sets the proxy variables of the environment
def proxy_server(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    _mitm_proxies: dict[str, tuple[Any, str]],
) -> str:
    """Scrapy's conftest's mitmproxy fixture: a mitmdump (found as Scrapy finds
    it: ``MITMDUMP``, ``mitmdump`` on ``PATH``, or ``uvx``) for the kind of proxy
    the test names, in ``http_proxy``/``https_proxy``. Skipped without
    ``mitmdump``, as Scrapy's ``requires_mitmproxy`` does (mitmproxy is not in
    the test extra: see docs/install.md, "What CI checks")."""
    if mock_mitm_proxy.mitmdump_cmd() is None:
        pytest.skip("mitmdump is not available")
    kind: str = request.param
    if kind not in _mitm_proxies:
        proxy = mock_mitm_proxy.MitmProxy(mode="socks5" if kind == "socks5" else None)
        _mitm_proxies[kind] = (proxy, proxy.start())
    _, url = _mitm_proxies[kind]
    if kind == "https":
        url = url.replace("http://", "https://")
    monkeypatch.setenv("http_proxy", url)
    monkeypatch.setenv("https_proxy", url)
    return kind


def _shared_pool(backend: str) -> Iterator[dict[str, Any]]:
    """The settings of a pool of ``backend``'s embedded server shared by
    name (``CDP_POOL_NAME``, as crawlers of one process share a browser),
    held open between tests by a crawler of the fixture's own and closed
    after its last test."""
    settings = {"CDP_POOL_BROWSER": backend, "CDP_POOL_NAME": f"scrapy-handler-suite-{backend}"}
    held = hold_pool({**SUITE_SETTINGS, **settings})
    try:
        yield settings
    finally:
        release_held(held)


@pytest.fixture(scope="module")
def lightpanda_settings() -> Iterator[dict[str, Any]]:
    """The embedded Lightpanda (the default backend), one for the module
    (:func:`_shared_pool`)."""
    yield from _shared_pool("lightpanda")


@pytest.fixture(scope="module")
def chromium_settings() -> Iterator[dict[str, Any]]:
    """The embedded Chromium (``CDP_POOL_BROWSER = "chromium"``), one for
    the module (:func:`_shared_pool`): each test's crawler joins it. Its
    pages are kept (Chromium's default) and cleared between requests as for
    any two crawlers sharing a pool. One Chromium a crawler took 108 s of
    wall time and 98 CPU-s for the module at ``-n 0``, one for the module
    44 s and 41 CPU-s, the same 186 passed, 26 skipped, 68 xfailed. A remote
    endpoint instead measured slower still (4 min 18 s against 1 min 37 s for
    the module at ``-n 2``) and takes an HTTPS proxy's certificate by
    ``Security.setIgnoreCertificateErrors``, not the embedded server's
    ``--ignore-certificate-errors``. Remote endpoints have their own tests
    (``tests/test_contract_remote.py`` and others)."""
    yield from _shared_pool("chromium")


#: backend -> tests whose browser must start inside the test (not join the
#: module's shared pool): what they check is read when the browser starts.
#: ``SSLKEYLOGFILE``: the browser writes the TLS keys to the file named in its
#: environment then. ``DOWNLOAD_MAXSIZE``: Lightpanda's own response cap is its
#: ``--http-max-response-size`` flag, so a crawler with another one is refused
#: a shared pool; and the tests of a ``download_maxsize`` below it check what
#: the crawler's own server does with it.
OWN_BROWSER: dict[str, frozenset[str]] = {
    "chromium": frozenset({"test_keylog"}),
    "lightpanda": frozenset(
        {
            "test_keylog",
            "test_download_with_maxsize",
            "test_download_with_maxsize_very_large_file",
            "test_download_with_content_length",
            "test_download_without_maxsize_limit",
            "test_download_with_small_maxsize_via_setting",
            "test_download_with_large_maxsize_via_setting",
        }
    ),
}


def _mixin(backend: str, server_fixture: str) -> type:
    class CDPHandlerMixin:
        """Scrapy's ``HTTP11DownloadHandlerMixin``, for ``CDPDownloadHandler``."""

        @property
        def download_handler_cls(self) -> type:
            return CDPDownloadHandler

        @property
        def settings_dict(self) -> dict[str, Any] | None:
            return {}

        @pytest.fixture(autouse=True)
        def _cdp_crawlers(
            self, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
        ) -> None:
            """Every crawler the base classes make (``get_crawler``) gets the
            add-on, every request rendered, on this backend's server."""
            backend_settings = request.getfixturevalue(server_fixture)
            test = request.node.nodeid.split("::", 1)[1]
            if test.rsplit("::", 1)[-1] in OWN_BROWSER[backend]:
                backend_settings = {
                    key: value for key, value in backend_settings.items() if key != "CDP_POOL_NAME"
                }
            if f"{backend}/{test}" in WAITS_OUT_THE_TIMEOUT:
                backend_settings = {
                    **backend_settings, "DOWNLOAD_TIMEOUT": SHORT_DOWNLOAD_TIMEOUT
                }  # fmt: skip

            def get_crawler(
                spidercls: Any = None, settings_dict: dict[str, Any] | None = None, *args: Any
            ) -> Any:
                settings = {**SUITE_SETTINGS, **backend_settings, **(settings_dict or {})}
                return scrapy_get_crawler(spidercls, settings, *args)

            monkeypatch.setattr(bases, "get_crawler", get_crawler)
            reason = allowed_reason(backend, test)
            if reason is not None:
                request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))

    CDPHandlerMixin.__name__ = f"CDPHandlerMixin_{backend}"
    return CDPHandlerMixin


#: Scrapy's test classes of test_downloader_handler_twisted_http11.py, with the
#: attributes that class sets beside its mixin (TestRealWebsite needs the
#: internet and is left out; TestTunnelingErrors tests Scrapy's own handler)
_CLASSES: list[tuple[str, type, dict[str, Any]]] = [
    ("TestHttp", bases.TestHttpBase, {}),
    ("TestHttps", bases.TestHttpsBase, {}),
    ("TestSimpleHttps", bases.TestSimpleHttpsBase, {}),
    ("TestHttpsWrongHostname", bases.TestHttpsWrongHostnameBase, {}),
    ("TestHttpsInvalidDNSId", bases.TestHttpsInvalidDNSIdBase, {}),
    ("TestHttpsInvalidDNSPattern", bases.TestHttpsInvalidDNSPatternBase, {}),
    ("TestHttpsCustomCiphers", bases.TestHttpsCustomCiphersBase, {}),
    ("TestHttpsTLSVersion", bases.TestHttpsTLSVersionBase, {}),
    ("TestHttpWithCrawler", bases.TestHttpWithCrawlerBase, {}),
    ("TestHttpsWithCrawler", bases.TestHttpWithCrawlerBase, {"is_secure": True}),
    ("TestHttpProxy", bases.TestHttpProxyBase, {}),
    ("TestHttpsProxy", bases.TestHttpProxyBase,
     {"is_secure": True, "handler_supports_tls_in_tls": False}),
    ("TestMitmProxy", bases.TestMitmProxyBase, {"handler_supports_tls_in_tls": False}),
]  # fmt: skip


#: capability flags of the base classes, for both backends: the handler logs
#: that it ignores meta["bindaddress"] (the browser opens its own connections)
FLAGS: dict[str, Any] = {"handler_supports_bindaddress_meta": False}


def suite_classes(backend: str, server_fixture: str, **flags: Any) -> dict[str, type]:
    """The test classes for ``backend``, by name; ``server_fixture`` names a
    fixture giving that backend's settings; ``flags``: the backend's own
    capability flags (beside :data:`FLAGS`)."""
    mixin = _mixin(backend, server_fixture)
    return {
        name: type(
            name,
            (mixin, base),
            {"__module__": f"tests.scrapy_suite.{backend}", **FLAGS, **flags, **attrs},
        )
        for name, base, attrs in _CLASSES
    }
