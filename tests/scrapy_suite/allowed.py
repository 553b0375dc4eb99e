"""The allow-list: Scrapy's handler tests that fail on a rendered request, each
with its reason, applied as ``xfail(strict=True)`` (a test that starts passing
fails the suite, so the list is kept exact).

Every reason is a difference by design (what a browser does, or cannot tell),
and docs/response.md lists it word for word (checked by
``tests/test_scrapy_handler_suite_docs.py``). A reason starting with "BUG:"
would be a bug not fixed yet, listed there as a known bug; there is none.
"""

from __future__ import annotations

HTML_DOM = (
    "A body served as text/html is rendered: the response is the browser's DOM serialized as "
    "UTF-8, not the bytes the server sent (Scrapy's mock server labels its echo, host, payload, "
    "URI, client address, chunked and bad-header pages text/html, Twisted's default)"
)
REPEATED_HEADER = (
    "A request header given several values reaches the server as one line, its values joined "
    'with ", " (a browser keeps one entry per header name); the echo page is text/html too, '
    "so rendered"
)
DECODED = (
    "The browser decodes a Content-Encoding itself and fails a body that is not in it: the "
    "response has the decoded body, never the encoded bytes"
)
BIND = (
    "The browser opens its own connections from its own address: DOWNLOAD_BIND_ADDRESS does "
    "not apply to rendered requests (a WARNING says so)"
)
RESOLVER = (
    "The browser resolves host names itself: a resolver set up inside the crawler's process "
    "does not reach it"
)
TLS = (
    "The browser makes its own TLS handshakes: Scrapy's TLS settings "
    "(DOWNLOAD_TLS_MIN_VERSION, DOWNLOAD_TLS_MAX_VERSION, DOWNLOADER_CLIENT_TLS_CIPHERS, "
    "DOWNLOADER_CLIENTCONTEXTFACTORY, DOWNLOADER_CLIENT_TLS_VERBOSE_LOGGING) do "
    "not apply to rendered requests, and certificates are checked as "
    "CDP_POOL_IGNORE_HTTPS_ERRORS says, not DOWNLOAD_VERIFY_CERTIFICATES (a WARNING names both "
    "when they disagree)"
)
CHROMIUM_407 = (
    "Chromium fails a 407 sent by a site that is not its proxy as a network error "
    "(net::ERR_UNEXPECTED_PROXY_AUTH)"
)
LIGHTPANDA_MAXSIZE = (
    "Lightpanda, started with --http-max-response-size = DOWNLOAD_MAXSIZE, ends a larger "
    "transfer without saying how many bytes came (Received more than M bytes), and a "
    "download_maxsize below DOWNLOAD_MAXSIZE is checked on the document once loaded, not on "
    "its Content-Length"
)
LIGHTPANDA_CONNECTION = (
    "Lightpanda 1.0.2 does not say where a document came from: response.ip_address and "
    "response.protocol are None on its rendered responses (Chromium fills them)"
)
LIGHTPANDA_CERTIFICATE = (
    "Lightpanda 1.0.2 does not hand over the server's certificate (it has no "
    "Network.getCertificate): response.certificate is None on its rendered responses (Chromium "
    "fills it)"
)
CHROMIUM_RAW_ADDRESS = (
    "Chromium does not say where a document handed back as its bytes came from (an empty or "
    "non-HTML body: read at its Fetch pause, its load then aborted, so Chromium sends no "
    "Network.responseReceived and Network.getCertificate answers no certificate): "
    "response.ip_address, response.protocol and response.certificate are None there"
)
LIGHTPANDA_DATALOSS = (
    "Lightpanda keeps nothing of a document cut short of its Content-Length or last chunk: "
    "under DOWNLOAD_FAIL_ON_DATALOSS = False (or meta download_fail_on_dataloss) the request "
    "still fails with ResponseDataLossError (Chromium hands back what arrived, flagged dataloss)"
)

_BOTH_HTTP_AND_HTTPS: dict[str, str] = {
    # text/html bodies, compared as bytes
    "test_request_header_none": HTML_DOM,
    "test_request_header_duplicate[request_headers0]": REPEATED_HEADER,
    "test_request_header_duplicate[request_headers1]": REPEATED_HEADER,
    "test_server_receives_correct_request_headers": HTML_DOM,
    "test_server_receives_no_extra_headers": HTML_DOM,
    "test_server_receives_correct_request_body": HTML_DOM,
    "test_no_cookie_processing_or_persistence": HTML_DOM,
    "test_host_header[True]": HTML_DOM,
    "test_host_header[False]": HTML_DOM,
    "test_content_length_zero_bodyless_post_request_headers": HTML_DOM,
    "test_content_length_zero_bodyless_post_only_one": HTML_DOM,
    "test_payload": HTML_DOM,
    "test_download_chunked_content": HTML_DOM,
    "test_download_with_warnsize_no_content_length": HTML_DOM,
    "test_verbatim_url": HTML_DOM,
    # decoding
    "test_download_is_not_automatically_gzip_decoded": DECODED,
    "test_download_has_correct_response_headers": DECODED,
    # connections
    "test_download_bind_address_setting[setting_value0]": BIND,
    "test_download_bind_address_setting[127.0.0.2]": BIND,
    "test_idna_rejected_hostname[xn--i-7iq.ws]": RESOLVER,
    "test_idna_rejected_hostname[foo_bar.example]": RESOLVER,
    # a body cut short, kept (flagged dataloss) as the DOM of what arrived
    "test_download_allow_data_loss_broken": HTML_DOM,
    "test_download_allow_data_loss_broken_chunked": HTML_DOM,
}

_WITH_CRAWLER: dict[str, str] = {}

#: test (``Class::test[params]``, or ``backend/Class::test[params]`` for one
#: backend) -> reason
ALLOWED: dict[str, str] = {
    **{f"TestHttp::{test}": reason for test, reason in _BOTH_HTTP_AND_HTTPS.items()},
    **{f"TestHttps::{test}": reason for test, reason in _BOTH_HTTP_AND_HTTPS.items()},
    **{f"TestHttpWithCrawler::{test}": reason for test, reason in _WITH_CRAWLER.items()},
    **{f"TestHttpsWithCrawler::{test}": reason for test, reason in _WITH_CRAWLER.items()},
    "TestHttps::test_tls_logging": TLS,
    "TestHttps::test_verify_certs": TLS,
    "TestHttps::test_verify_certs_deprecated": TLS,
    "TestHttpsCustomCiphers::test_download": TLS,
    "TestHttpsTLSVersion::test_download[client-max-below-server-min]": TLS,
    "TestHttpsTLSVersion::test_download[client-min-above-server-max]": TLS,
    # Scrapy's proxy echo server answers text/html (an HTTPS proxy's own
    # certificate is accepted: these fail on the body only)
    "TestHttpProxy::test_download_with_proxy": HTML_DOM,
    "TestHttpProxy::test_download_without_proxy": HTML_DOM,
    "TestHttpProxy::test_download_with_proxy_without_http_scheme": HTML_DOM,
    "TestHttpsProxy::test_download_without_proxy": HTML_DOM,
    "TestHttpsProxy::test_download_with_proxy_without_http_scheme": HTML_DOM,
    "TestHttpsProxy::test_download_with_proxy": HTML_DOM,
    # mitmproxy: Scrapy's echo page (text/html) read as JSON
    **{
        f"TestMitmProxy::test_proxy_dont_leak_auth_header[{case}]": HTML_DOM
        for case in ("HTTP dest-http", "HTTPS dest-http", "HTTP dest-https")
    },
    # Chromium only (Lightpanda refuses the bad header line, its capability
    # flag "fail")
    "chromium/TestHttp::test_download_bad_header": HTML_DOM,
    "chromium/TestHttps::test_download_bad_header": HTML_DOM,
    "chromium/TestHttp::test_download_has_correct_http_status_code[status=407]": CHROMIUM_407,
    "chromium/TestHttps::test_download_has_correct_http_status_code[status=407]": CHROMIUM_407,
    "chromium/TestHttpWithCrawler::test_response_ip_address_empty_body": CHROMIUM_RAW_ADDRESS,
    "chromium/TestHttpsWithCrawler::test_response_ip_address_empty_body": CHROMIUM_RAW_ADDRESS,
    "chromium/TestHttpsWithCrawler::test_response_ssl_certificate_empty_body": (
        CHROMIUM_RAW_ADDRESS
    ),
    # Lightpanda only
    "lightpanda/TestHttpsWithCrawler::test_response_ssl_certificate": LIGHTPANDA_CERTIFICATE,
    "lightpanda/TestHttpsWithCrawler::test_response_ssl_certificate_empty_body": (
        LIGHTPANDA_CERTIFICATE
    ),
    "lightpanda/TestHttp::test_protocol": LIGHTPANDA_CONNECTION,
    "lightpanda/TestHttps::test_protocol": LIGHTPANDA_CONNECTION,
    **{
        f"lightpanda/{cls}::{test}": LIGHTPANDA_CONNECTION
        for cls in ("TestHttpWithCrawler", "TestHttpsWithCrawler")
        for test in ("test_response_ip_address", "test_response_ip_address_empty_body")
    },
    **{
        f"lightpanda/{cls}::test_download_allow_data_loss_{case}": LIGHTPANDA_DATALOSS
        for cls in ("TestHttp", "TestHttps")
        for case in ("broken", "broken_chunked", "via_setting")
    },
    "lightpanda/TestHttp::test_download_with_maxsize": LIGHTPANDA_MAXSIZE,
    "lightpanda/TestHttps::test_download_with_maxsize": LIGHTPANDA_MAXSIZE,
    "lightpanda/TestHttp::test_download_with_maxsize_very_large_file": LIGHTPANDA_MAXSIZE,
    "lightpanda/TestHttps::test_download_with_maxsize_very_large_file": LIGHTPANDA_MAXSIZE,
    "lightpanda/TestHttpWithCrawler::test_download_with_content_length": LIGHTPANDA_MAXSIZE,
    "lightpanda/TestHttpsWithCrawler::test_download_with_content_length": LIGHTPANDA_MAXSIZE,
}


#: allowed tests whose failure is waiting out ``DOWNLOAD_TIMEOUT`` (the rest of a
#: ``Content-Length`` that never comes: Lightpanda checks it on the document once
#: loaded): run with :data:`SHORT_DOWNLOAD_TIMEOUT`, they fail the same way
#: sooner (15 s each before, the suite's own timeout)
WAITS_OUT_THE_TIMEOUT = frozenset(
    {
        "lightpanda/TestHttpWithCrawler::test_download_with_content_length",
        "lightpanda/TestHttpsWithCrawler::test_download_with_content_length",
    }
)

#: seconds: the ``DOWNLOAD_TIMEOUT`` of :data:`WAITS_OUT_THE_TIMEOUT`'s tests
SHORT_DOWNLOAD_TIMEOUT = 2


def allowed_reason(backend: str, test: str) -> str | None:
    """The reason ``test`` is allowed to fail on ``backend``, or ``None``."""
    return ALLOWED.get(f"{backend}/{test}") or ALLOWED.get(test)


def reasons() -> set[str]:
    """Every reason of the allow-list."""
    return set(ALLOWED.values())
