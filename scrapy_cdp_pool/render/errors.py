"""The one place where browser and CDP errors become Scrapy download exceptions.

Scrapy's ``RetryMiddleware`` retries the exceptions in ``RETRY_EXCEPTIONS``
(timeouts, refused connections, failed downloads): a navigation timeout, a
refused endpoint, a crashed page and a closed connection map onto those, so they
are retried with no extra setting. Bad input (an unknown action), a page
script error, a CDP message over ``CDP_POOL_MAX_MESSAGE_MB``, what a backend
cannot do (:class:`ActionUnsupported`), a page that left for another scheme and
a page over its memory ceiling are not retried: retrying cannot help.

Every message here is bounded (:func:`~scrapy_cdp_pool.messages.cap_message`):
a page's, a browser's or a server's words can be of any size, and they end up
in the log, the failures file and the exception Scrapy is given.
"""

from __future__ import annotations

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
)

from scrapy_cdp_pool.cdp import (
    CDPConnectError,
    CDPConnectionClosed,
    CDPError,
    CDPMessageTooLarge,
    CDPRequestTooLarge,
    CDPTimeoutError,
)
from scrapy_cdp_pool.messages import cap_message


class RenderError(Exception):
    """Base class of the render errors below; the message is cut to
    :data:`~scrapy_cdp_pool.messages.MESSAGE_LIMIT_CHARS` characters."""

    def __init__(self, message: object = "") -> None:
        super().__init__(cap_message(message))


class NavigationFailed(RenderError):
    """The browser could not load the URL; ``reason`` is its error text
    (``net::ERR_CONNECTION_REFUSED`` on Chromium)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: navigation failed: {reason}")
        self.url = url
        self.reason = cap_message(reason)


class PageCrashed(RenderError):
    """The page's renderer crashed or its target went away."""


class PageScriptError(RenderError):
    """JavaScript run for an action threw, or an element was not found."""


class ActionError(RenderError):
    """An action of ``meta["cdp_actions"]`` failed; the message names it."""


class ActionUnsupported(RenderError):
    """An action or option of ``meta["cdp_actions"]`` the request's backend
    cannot perform (e.g. a JPEG screenshot or scrolling on Lightpanda, which
    has no layout). Raised before the page is opened; not retried: use a
    backend that can (Chromium)."""


class NavigationToOtherScheme(RenderError):
    """The page replaced itself with a non-http(s) document (``file:`` on
    Lightpanda): there is no web page to return. Not retried."""

    def __init__(self, url: str, target: str) -> None:
        super().__init__(f"{url}: the page navigated to {target!r}, which is not a web page")
        self.url = url
        self.target = target


class PageMemoryExceeded(PageCrashed):
    """The page crashed on a browser started with a JavaScript heap ceiling
    (``CDP_POOL_PAGE_HEAP_LIMIT_MB``): its scripts most likely allocated
    past it. Not retried: the same page would do the same again. (The
    browser does not tell an out-of-memory crash from another one, so a rare
    other crash is reported, and not retried, the same way.)"""


class DedicatedServerFailed(RenderError):
    """A dedicated server (an identity's proxy or time zone, see
    :mod:`scrapy_cdp_pool.pool.dedicated`) did not start: that identity's
    request fails (and is retried), the rest of the pool goes on."""


class SlotWaitTimeout(DownloadTimeoutError):
    """``download_timeout`` passed while the request still waited for a
    browser slot (every connection busy, or its dedicated server): the page
    was never opened, so it is not counted against the request's profile.
    Retried like any download timeout."""


class ResponseTooLarge(RenderError):
    """The document is larger than ``DOWNLOAD_MAXSIZE`` (bytes)."""

    def __init__(self, url: str, size: int, limit: int, *, expected: bool) -> None:
        prefix = "Expected to receive" if expected else "Received"
        super().__init__(
            f"{prefix} {size} bytes which is larger than download max size ({limit}) for {url}"
        )


class CertificateRejected(RenderError):
    """The browser refused the site's TLS certificate (self-signed, expired,
    wrong host). Plain Scrapy does not verify certificates; the message names
    ``CDP_POOL_IGNORE_HTTPS_ERRORS``, which makes both backends accept them.
    Not retried: the same certificate comes back."""


class RequestTooLarge(RenderError):
    """A CDP message of the request (its body, base64-encoded, or a script
    of an action) is larger than the endpoint takes; the message names the
    size and ``CDP_POOL_MAX_MESSAGE_MB``. Not retried."""


class PoolUnavailable(RenderError):
    """The pool cannot serve: its server did not start, no endpoint answers,
    or it is closing."""


_TIMEOUT_TEXT = ("ERR_TIMED_OUT", "ERR_CONNECTION_TIMED_OUT")
_REFUSED_TEXT = ("ERR_CONNECTION_REFUSED", "ERR_ADDRESS_UNREACHABLE", "ERR_CONNECTION_RESET")
_DNS_TEXT = ("ERR_NAME_NOT_RESOLVED", "ERR_NAME_RESOLUTION_FAILED")
# Chromium's net::ERR_CERT_*; Lightpanda's libcurl errors (PeerFailedVerification...).
_CERTIFICATE_TEXT = (
    "err_cert_",
    "peerfailedverification",
    "sslcacert",
    "sslcertproblem",
    "sslissuererror",
)


def to_scrapy_error(error: BaseException, request_text: str) -> BaseException:
    """The Scrapy download exception for ``error`` (to raise ``from error``),
    or ``error`` itself when it is not a download failure (bad input). The
    message is cut (:func:`~scrapy_cdp_pool.messages.cap_message`)."""
    message = cap_message(f"{request_text}: {error}")
    if isinstance(error, (TimeoutError, CDPTimeoutError)):
        return DownloadTimeoutError(message)
    if isinstance(error, ResponseTooLarge):
        return DownloadCancelledError(message)
    if isinstance(error, CDPMessageTooLarge):
        # Like a body over DOWNLOAD_MAXSIZE: the same page would be as large
        # again, so not retried.
        return DownloadCancelledError(
            f"{message} (CDP_POOL_MAX_MESSAGE_MB = {error.limit_bytes / (1 << 20):g}; "
            "raise it for pages or screenshots that large)"
        )
    if isinstance(error, CDPRequestTooLarge):
        return RequestTooLarge(message)
    if isinstance(error, (CDPConnectError, PoolUnavailable, DedicatedServerFailed)):
        return DownloadConnectionRefusedError(message)
    if isinstance(error, NavigationFailed):
        reason = error.reason
        if any(text in reason.lower() for text in _CERTIFICATE_TEXT):
            return CertificateRejected(
                f"{message} (the browser refused the site's TLS certificate; plain Scrapy does "
                "not verify certificates: set CDP_POOL_IGNORE_HTTPS_ERRORS = True to accept it)"
            )
        if any(text in reason for text in _TIMEOUT_TEXT):
            return DownloadTimeoutError(message)
        if any(text in reason for text in _DNS_TEXT):
            return CannotResolveHostError(message)
        if any(text in reason for text in _REFUSED_TEXT):
            return DownloadConnectionRefusedError(message)
        return DownloadFailedError(message)
    if isinstance(error, PageMemoryExceeded):
        return error
    if isinstance(error, (CDPConnectionClosed, PageCrashed, CDPError)):
        return DownloadFailedError(message)
    return error


def error_kind(error: BaseException) -> str:
    """A short stats key for ``error`` (``cdp_pool/errors/<kind>``)."""
    return type(error).__name__
