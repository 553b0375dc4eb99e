"""The one place where the plugin's errors become Scrapy download exceptions:
:func:`scrapy_errors`, the context manager the download handler renders in.

Scrapy's ``RetryMiddleware`` retries the exceptions in ``RETRY_EXCEPTIONS``
(timeouts, refused connections, failed downloads): a navigation timeout, a
refused endpoint, a crashed page and a closed connection map onto those, so they
are retried with no extra setting. Bad input (an unknown action), a page
script error, a CDP message over ``CDP_POOL_MAX_MESSAGE_MB``, what a backend
cannot do (:class:`~scrapy_cdp_pool.errors.ActionUnsupported`), a page that left
for another scheme and a page over its memory ceiling are not retried: retrying
cannot help. The pool's own waits are named where they happen
(:class:`~scrapy_cdp_pool.errors.SlotWaitTimeout`,
:class:`~scrapy_cdp_pool.errors.PoolStartTimeout`).

Every message here is bounded (:func:`~scrapy_cdp_pool.messages.cap_message`):
a page's, a browser's or a server's words can be of any size, and they end up
in the log, the failures file and the exception Scrapy is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)

from scrapy_cdp_pool.errors import (
    BrowserUnresponsive,
    CDPConnectError,
    CDPConnectionClosed,
    CDPError,
    CDPMessageTooLarge,
    CDPRequestTooLarge,
    CDPTimeoutError,
    CertificateRejected,
    DedicatedServerFailed,
    NavigationFailed,
    PageCrashed,
    PageMemoryExceeded,
    PageScriptStalled,
    PoolStartTimeout,
    PoolUnavailable,
    RequestTooLarge,
    ResponseTooLarge,
    SlotWaitTimeout,
    is_data_loss,
)
from scrapy_cdp_pool.messages import cap_message

_TIMEOUT_TEXT = ("ERR_TIMED_OUT", "ERR_CONNECTION_TIMED_OUT", "OperationTimedout")
# Chromium's net::ERR_*, then Lightpanda's libcurl error names.
# (A connection reset once connected is a failed download, as in Scrapy.)
_REFUSED_TEXT = ("ERR_CONNECTION_REFUSED", "ERR_ADDRESS_UNREACHABLE", "CouldntConnect")
_DNS_TEXT = ("ERR_NAME_NOT_RESOLVED", "ERR_NAME_RESOLUTION_FAILED", "CouldntResolveHost")
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
        return _navigation_error(error.reason, message)
    if isinstance(error, (PageMemoryExceeded, PageScriptStalled)):
        return error  # not retried: the same page would do the same again
    if isinstance(error, (CDPConnectionClosed, PageCrashed, CDPError)):
        return DownloadFailedError(message)
    return error


def _navigation_error(reason: str, message: str) -> BaseException:
    """Scrapy's download exception for a navigation the browser failed with
    ``reason`` (Chromium's ``net::ERR_*`` text, Lightpanda's libcurl error)."""
    if any(text in reason.lower() for text in _CERTIFICATE_TEXT):
        return CertificateRejected(
            f"{message} (the browser refused the site's TLS certificate; plain Scrapy does "
            "not verify certificates: set CDP_POOL_IGNORE_HTTPS_ERRORS = True to accept it)"
        )
    if any(text in reason for text in _TIMEOUT_TEXT):
        return DownloadTimeoutError(message)
    if is_data_loss(reason):  # retried by RETRY_EXCEPTIONS
        return ResponseDataLossError(message)
    if any(text in reason for text in _DNS_TEXT):
        return CannotResolveHostError(message)
    if any(text in reason for text in _REFUSED_TEXT):
        return DownloadConnectionRefusedError(message)
    return DownloadFailedError(message)


def error_kind(error: BaseException) -> str:
    """A short stats key for ``error`` (``cdp_pool/errors/<kind>``)."""
    return type(error).__name__


@contextmanager
def scrapy_errors(
    where: str,
    timeout_s: float,
    count: Callable[[BaseException], None],
    passthrough: tuple[type[BaseException], ...] = (),
) -> Iterator[None]:
    """Run the block; an exception it raises is counted (``count(error)``,
    e.g. ``cdp_pool/errors/<kind>``) and raised as Scrapy's download exception
    for it (:func:`to_scrapy_error`), its message starting with ``where`` (the
    request, and the proxy it went through). The pool's named waits
    (:class:`SlotWaitTimeout`, :class:`PoolStartTimeout`) keep their type; a
    bare ``TimeoutError`` is the ``download_timeout`` of ``timeout_s`` seconds
    passing during the render. :class:`BrowserUnresponsive` (a
    ``DownloadTimeoutError``, retried) keeps its type too. An exception of
    ``passthrough`` is counted and raised as it is (the caller handles it).
    """
    try:
        yield
    except Exception as e:
        count(e)
        if isinstance(e, passthrough):
            raise
        if isinstance(e, (SlotWaitTimeout, PoolStartTimeout, BrowserUnresponsive)):
            raise type(e)(cap_message(f"{where}: {e}")) from e
        if isinstance(e, TimeoutError) and not str(e):
            e = TimeoutError(f"no response within download_timeout = {timeout_s:g} s")
        translated = to_scrapy_error(e, where)
        if translated is e:  # not a download failure (bad input): as it is
            raise
        raise translated from e
