"""Every exception type of the plugin, in one leaf module (it imports only
Scrapy's exceptions and :mod:`scrapy_cdp_pool.messages`), so any layer can
raise or catch them without importing a layer above it.

Every one is a :class:`CDPPoolError` (``except CDPPoolError`` catches all the
plugin's own), and also the standard or Scrapy class a caller would catch for
that fault (``ValueError``, ``IgnoreRequest``, ``DownloadTimeoutError``...). They
come in sections, each with its own root: the CDP client's (:class:`CDPError`),
the render's and the pool's (:class:`RenderError`), the profiles'
(:class:`ProfileError`), the durable JOBDIR's (:class:`JobdirError`), bad input
(:class:`InvalidRequestMeta`, :class:`UnserializableRequestError`), the cluster's
(:class:`RedisUnavailable`), the render ladder's (:class:`ExpectationNotMet`),
and the tools' (:class:`PlotError`). Users import them from here.

Translating them into Scrapy's download exceptions happens once, at the
download handler's boundary (:mod:`scrapy_cdp_pool.core.boundary`).

The tree (first base, then in brackets the standard or Scrapy classes each
also is; ``tests/unit/test_errors_tree.py`` checks it against the classes)::

    CDPPoolError
        ActionTimeout (TimeoutError)
        CDPError
            CDPConnectError
            CDPConnectionClosed
                CDPBacklogExceeded
                CDPMalformedMessage
                CDPMessageTooLarge
                CDPRequestTooLarge
            CDPProtocolError
            CDPTimeoutError
        ExpectationNotMet
        FirstByteTimeout (TimeoutError)
        InvalidRequestMeta (ValueError)
        JobdirError (RuntimeError)
            JobdirCorrupt
            JobdirFull
            JobdirLocked
        LeaseLost (IgnoreRequest)
        PlotError
        PoolStartTimeout (DownloadTimeoutError)
        ProfileError (IgnoreRequest)
            ProfileFileError
                ProfileStoreUnreachable
                StaleProfileWrite
            ProfileRetired
            ProfileSignedOut
            ProfileUnsupported
        RedisUnavailable (RuntimeError)
        RenderError
            ActionError
            ActionUnsupported
            BrowserUnresponsive (DownloadTimeoutError)
            CertificateRejected
            DedicatedServerFailed
            LivePageFailed
            NavigationFailed
            NavigationForbidden (IgnoreRequest)
            NavigationToOtherScheme
            PageCrashed
                PageMemoryExceeded
                PageScriptStalled
            PageScriptError
                NavigationLoop
            PoolUnavailable
                CapabilityUnavailable
            PrivateNavigationRefused
            ProxyAuthenticationRejected
            ProxyUnsupported
                ProxyConflict
            RequestTooLarge
            ResponseTooLarge
        RequestPoisoned
        ServerStartError (RuntimeError)
            ServerMisconfigured
        SlotWaitTimeout (DownloadTimeoutError)
        UnserializableRequestError (ValueError)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest

from scrapy_cdp_pool.messages import cap_message

LOCK_NAME = "cdp_pool.lock"
"""The JOBDIR's lock file (:mod:`scrapy_cdp_pool.jobdir.lock`)."""


class CDPPoolError(Exception):
    """The root of every exception scrapy-cdp-pool raises."""


# CDP client ------------------------------------------------------------


class CDPError(CDPPoolError):
    """Base class of every error raised by :mod:`scrapy_cdp_pool.browser.cdp`; the
    message (a server's words, of any size) is cut to
    :data:`~scrapy_cdp_pool.messages.MESSAGE_LIMIT_CHARS` characters."""

    def __init__(self, message: object = "") -> None:
        super().__init__(cap_message(message))


class CDPProtocolError(CDPError):
    """The server answered a command with an ``error`` object.

    ``method`` is the CDP method (``"Page.navigate"``), ``code`` and
    ``message`` are the server's own.
    """

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method} failed: {message} (code {code})")
        self.method = method
        self.code = code
        self.message = cap_message(message)


class CDPConnectionClosed(CDPError):
    """The WebSocket closed (server killed, socket dropped, connection retired)
    while a command was waiting for its answer, or before it was sent."""


class CDPRequestTooLarge(CDPConnectionClosed):
    """The connection closed while a command larger than
    :data:`~scrapy_cdp_pool.browser.cdp.client.LARGE_MESSAGE` bytes waited for its
    answer: most likely the server refused it as too large (Lightpanda closes
    a connection whose message passes its ``--cdp-max-message-size``).
    ``size`` is the message's size in bytes."""

    def __init__(self, method: str, size: int, reason: str) -> None:
        super().__init__(
            f"{method}: the endpoint closed the connection ({reason}) while a {size}-byte "
            "message waited for its answer: most likely larger than it takes (Lightpanda's "
            "--cdp-max-message-size, 1 MiB by default; CDP_POOL_MAX_MESSAGE_MB sets it on "
            "the embedded servers)"
        )
        self.method = method
        self.size = size


class CDPConnectError(CDPError):
    """The WebSocket could not be opened: refused, unreachable, or the server
    answered the upgrade with an HTTP error such as Lightpanda's 503 when it
    already serves ``--cdp-max-connections`` clients."""


class CDPTimeoutError(CDPError):
    """A command got no answer within its timeout (seconds)."""

    def __init__(self, method: str, timeout_s: float) -> None:
        super().__init__(f"{method} got no answer within {timeout_s:.1f} s")
        self.method = method
        self.timeout_s = timeout_s


class CDPMessageTooLarge(CDPConnectionClosed):
    """The server sent (or announced) a message larger than the client's cap,
    ``limit_bytes`` (``CDP_POOL_MAX_MESSAGE_MB``); the connection was closed
    before the message was held in memory in full."""

    def __init__(self, message: str, *, limit_bytes: int) -> None:
        super().__init__(message)
        self.limit_bytes = limit_bytes


class CDPMalformedMessage(CDPConnectionClosed):
    """The server sent a message that is not a CDP message (not JSON, not a
    JSON object, or fields of the wrong types); the connection was closed."""


class CDPBacklogExceeded(CDPConnectionClosed):
    """More commands than the client allows waited for an answer at once on
    one connection (each event the browser pauses on takes one): a server
    that floods events and answers none; the connection was closed."""


# Pool and render --------------------------------------------------------


class RenderError(CDPPoolError):
    """Base class of the render errors below; the message is cut to
    :data:`~scrapy_cdp_pool.messages.MESSAGE_LIMIT_CHARS` characters."""

    def __init__(self, message: object = "") -> None:
        super().__init__(cap_message(message))


#: The browsers' words for a body cut short of its ``Content-Length`` or its
#: last chunk (Chromium's net errors, Lightpanda's libcurl error): Scrapy's
#: data loss (``ResponseDataLossError``, or a response flagged ``dataloss``
#: under ``DOWNLOAD_FAIL_ON_DATALOSS = False``).
DATA_LOSS_TEXT = (
    "ERR_CONTENT_LENGTH_MISMATCH",
    "ERR_INCOMPLETE_CHUNKED_ENCODING",
    "PartialFile",
)


def is_data_loss(reason: str) -> bool:
    """Whether a browser's error text ``reason`` says a body was cut short."""
    return any(text in reason for text in DATA_LOSS_TEXT)


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


class NavigationLoop(PageScriptError):
    """The page navigated itself (``location`` set by a script, a meta
    refresh) more times during one render than ``REDIRECT_MAX_TIMES``
    allows a plain request's redirects; not retried, like Scrapy's "max
    redirections reached"."""


class ActionError(RenderError):
    """An action of ``meta["cdp_actions"]`` failed; the message names it."""


class ActionTimeout(CDPPoolError, TimeoutError):
    """An action (or the wait it is) ran out of its timeout; the message says
    what it waited for. A ``TimeoutError``, so the request fails as a download
    timeout as before; the render ladder climbs on it (a fuller browser may
    render what was waited for)."""


class FirstByteTimeout(CDPPoolError, TimeoutError):
    """No main document within a ``download_timeout`` the user set longer
    than the navigation timeout (``RenderSpec.first_byte_timeout_s``); the
    message names that ``download_timeout``. A ``TimeoutError``: the request
    fails as a download timeout."""


class NavigationForbidden(RenderError, IgnoreRequest):
    """A navigation the page started itself (a script, a meta refresh, an
    action's click) into a path its host's robots.txt disallows, with
    ``ROBOTSTXT_OBEY``: refused before it left the browser. An
    ``IgnoreRequest``, as plain Scrapy drops a request (and a redirect) that
    robots.txt forbids; not retried."""


class PrivateNavigationRefused(RenderError):
    """The page navigated its own main frame (a script, a meta refresh, an
    action's click) to a loopback, private or link-local address other than
    its own host's, refused by the private-network rule
    (``CDP_POOL_ALLOW_PRIVATE_NETWORKS = False``): the browser would show its
    error page, so there is no page to hand back. Not retried (the page would
    do the same again)."""


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


class PageScriptStalled(PageCrashed):
    """A page script kept the browser busy without returning (``for(;;){}``,
    a loop waiting for a layout Lightpanda does not have) until the embedded
    Lightpanda's watchdog stopped it (``--watchdog-ms``: half of
    ``DOWNLOAD_TIMEOUT``, at most 30 s) and closed the page's connection; or,
    on Chromium, past the render's deadline, when the page's main thread did
    not answer a probe (see :mod:`scrapy_cdp_pool.render._request.script_stall`). Not
    retried: the same page would stall again there. On the render ladder a
    fallback to Chromium may render a page Lightpanda stalled on."""


class BrowserUnresponsive(RenderError, DownloadTimeoutError):
    """The request's deadline passed on Chromium while the whole browser,
    not only this page, answered no command: a browser-level command sent
    beside the stall probe (see :mod:`scrapy_cdp_pool.render._request.script_stall`)
    got no answer either, or the browser restarted while the page was being
    probed. Another page swamping the browser (a ``window.open`` storm, 1,000
    frames) does this to its neighbours, so it says nothing about this page:
    retried like any download timeout (a :class:`DownloadTimeoutError`), never
    named :class:`PageScriptStalled`."""


class DedicatedServerFailed(RenderError):
    """A dedicated server (a profile's proxy or time zone, see
    :mod:`scrapy_cdp_pool.browser.pool.dedicated`) did not start: that profile's
    request fails (and is retried), the rest of the pool goes on."""


class SlotWaitTimeout(CDPPoolError, DownloadTimeoutError):
    """``download_timeout`` passed while the request still waited for a
    browser slot (every connection busy, or its dedicated server): the page
    was never opened, so it is not counted against the request's profile.
    Retried like any download timeout."""


class PoolStartTimeout(CDPPoolError, DownloadTimeoutError):
    """``download_timeout`` passed while the pool's remote endpoints
    (``CDP_POOL_ENDPOINTS``) were still answering ``/json/version``: no page
    was opened. A browser the plugin starts itself (the embedded server, a
    dedicated server) does not fail a request by its ``download_timeout``:
    its start is bounded by ``CDP_POOL_SERVER_START_TIMEOUT_SECONDS``.
    Retried like any download timeout; raised where the wait happens
    (:meth:`~scrapy_cdp_pool.browser.pool.pool.ConnectionPool.lease`)."""


class ResponseTooLarge(RenderError):
    """The document is larger than ``DOWNLOAD_MAXSIZE`` (bytes). ``size`` is
    what was received (or announced, ``expected``); ``more_than``: the
    browser did not tell how much, only that it passed ``size``."""

    def __init__(
        self, url: str, size: int, limit: int, *, expected: bool, more_than: bool = False
    ) -> None:
        prefix = "Expected to receive" if expected else "Received"
        amount = f"more than {size}" if more_than else str(size)
        super().__init__(
            f"{prefix} {amount} bytes which is larger than download max size ({limit}) for {url}"
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


class CapabilityUnavailable(PoolUnavailable):
    """No endpoint of the pool can honour what a request needs (e.g. a
    "Mozilla" user agent on a pool of Lightpanda servers)."""


class ServerStartError(CDPPoolError, RuntimeError):
    """The embedded server did not start or did not get ready in time."""


class ServerMisconfigured(ServerStartError):
    """The embedded server cannot start as configured (its binary missing or
    not executable, its socket path too long): the pool does not try again."""


class ProxyUnsupported(RenderError):
    """A request's ``meta["proxy"]`` cannot be honoured by the pool (the
    message says why); the request is not sent. Not retried."""


class ProxyAuthenticationRejected(RenderError):
    """The request's proxy answered ``407 Proxy Authentication Required`` to
    the page's ``CONNECT``: its credentials are missing or wrong. Lightpanda
    reports that only as ``CouldntConnect``; the plugin then asks the proxy
    itself (:mod:`scrapy_cdp_pool.core.proxy_probe`). Not retried: the same
    credentials get the same answer."""


class ProxyConflict(ProxyUnsupported):
    """A request names a profile with its own proxy and, in ``meta["proxy"]``,
    another one. Not retried."""


class LivePageFailed(RenderError):
    """Playwright could not be connected to a request's live page
    (``meta["cdp_include_page"]``); the message says why (the relay's secret
    URL is never in it)."""


# Profiles ---------------------------------------------------------------


class ProfileError(CDPPoolError, IgnoreRequest):
    """A request of profile ``name`` cannot be sent as that profile."""

    def __init__(self, name: str, reason: str) -> None:
        reason = cap_message(reason)  # may carry a sign-in hook's error
        super().__init__(cap_message(f"profile {name!r}: {reason}"))
        self.name = name
        self.reason = reason


class ProfileFileError(ProfileError):
    """A profile file is missing or invalid; ``path`` and ``problem`` say which
    and what."""

    def __init__(self, name: str, path: Path, problem: str) -> None:
        super().__init__(name, f"{path}: {problem}")
        self.path = path
        self.problem = problem


class StaleProfileWrite(ProfileFileError):
    """A save-back to the cluster's shared profiles refused by fencing: the
    profile lock the request was taken with has expired (``current`` is
    ``None``) or another worker holds the profile now (``current``: that
    lock's token). ``token`` is the write's own (``None``: the request
    carried none). The stored state is left as it was; the response is kept."""

    def __init__(self, name: str, key: str, token: int | None, current: int | None) -> None:
        held = "has expired" if current is None else f"is now held with token {current}"
        problem = (
            f"save-back refused (fencing): the profile lock taken with token {token} {held}; "
            "the newer state stays"
            if token is not None
            else "save-back refused (fencing): the request carries no fencing token"
        )
        super().__init__(name, Path(key), problem)
        self.token = token
        self.current = current


class ProfileStoreUnreachable(ProfileFileError):
    """The cluster's Redis did not answer a read or a save-back of the
    profile; the copy last read stays in use."""


class ProfileSignedOut(ProfileError):
    """The site shows the profile signed out and it could not sign back in."""


class ProfileRetired(ProfileError):
    """The profile was retired for this crawl (too many failures, signed
    out, or no endpoint can honour it); ``reason`` says which."""


class ProfileUnsupported(ProfileError):
    """No endpoint of the pool can honour what the profile asks for."""


# JOBDIR and requests ----------------------------------------------------


class JobdirError(CDPPoolError, RuntimeError):
    """The JOBDIR cannot be used as it is; the message says why and what to do."""


class JobdirFull(JobdirError):
    """The JOBDIR's database could not be written: its disk is full, or
    read-only or failing (I/O errors). Nothing more is written to it in this
    run (so nothing is acknowledged that a resume would need); the crawl stops
    (``finish_reason`` ``cdp_pool_disk_full`` or ``cdp_pool_disk_error``)."""


class JobdirCorrupt(JobdirError):
    """The JOBDIR's database cannot be read, or is not one this plugin wrote
    (empty, tables missing): refused at start, never taken for a fresh crawl.
    ``path`` is the database."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(
            f"{path}: {problem}; the crawl cannot resume from this JOBDIR: restore it from a "
            "copy, or start a new JOBDIR (a JOBDIR without this file starts afresh)"
        )
        self.path = path


class JobdirLocked(JobdirError):
    """Another crawl (``pid``, when its lock file says) holds the JOBDIR."""

    def __init__(self, directory: Path, pid: int | None) -> None:
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(
            f"JOBDIR {directory} is in use by {holder} ({directory / LOCK_NAME} is locked): "
            "two crawls on one JOBDIR would fetch the same requests; wait for that crawl "
            "to end (or stop it), or use another JOBDIR"
        )
        self.directory = directory
        self.pid = pid


class UnserializableRequestError(CDPPoolError, ValueError):
    """The request cannot be stored in ``JOBDIR``; the message names why."""


class InvalidRequestMeta(CDPPoolError, ValueError):
    """A meta value of the request is invalid; the message names the key, the
    value and what is expected. Not retried."""


class PlotError(CDPPoolError):
    """The plot cannot be drawn (no matplotlib, no sample); the message says why."""


# Cluster crawl (scrapy_cdp_pool.cluster) ---------------------------------


class RedisUnavailable(CDPPoolError, RuntimeError):
    """The cluster crawl's Redis could not be reached, now or within the
    current backoff (:class:`~scrapy_cdp_pool.cluster.link.ClusterLink`);
    its callers keep what they could not send and try again later."""


class RequestPoisoned(CDPPoolError):
    """The request's lease ran out ``CDP_POOL_CLUSTER_MAX_DELIVERIES`` times in a
    cluster crawl: every worker that took it stopped before finishing it
    (killed, out of memory, cut off), so it fails through its errback instead
    of being handed to the next worker. Not retried; ``deliveries`` is the
    count of leases that ran out."""

    def __init__(self, message: str, deliveries: int) -> None:
        super().__init__(message)
        self.deliveries = deliveries


class LeaseLost(CDPPoolError, IgnoreRequest):
    """Right before the request was to leave for the browser or the download,
    this cluster worker no longer held its lease (it ran out: the worker was
    stalled or cut off, and another worker may do the request) or its
    profile lock's fencing token: the request is dropped here, not started.
    An ``IgnoreRequest``; the request's errback is not called (the worker that
    holds it now runs its callback or errback)."""


# Render ladder ----------------------------------------------------------


@dataclass(frozen=True)
class RungResult:
    """What one rung of the render ladder gave a request: ``outcome`` is
    ``"met"``, ``"incomplete: <what was missing>"``, ``"redirect (not
    checked)"`` or ``"<ErrorClass>: <message>"``; ``seconds`` its wall time."""

    rung: str
    outcome: str
    seconds: float

    def as_dict(self) -> dict[str, object]:
        return {"rung": self.rung, "outcome": self.outcome, "seconds": round(self.seconds, 3)}


class ExpectationNotMet(CDPPoolError):
    """A request's expectation (``meta["cdp_expect"]`` or ``CDP_POOL_EXPECT``)
    was met on no rung of the render ladder. ``results`` holds every rung's
    outcome, in order; ``kind`` is the request's page kind. Not retried by
    Scrapy (it is not a download error): every rung was tried once already."""

    def __init__(self, request_text: str, kind: str, results: list[RungResult]) -> None:
        tried = "; ".join(f"{r.rung}: {r.outcome}" for r in results)
        super().__init__(cap_message(f"{request_text}: expectation met on no rung ({tried})"))
        self.kind = kind
        self.results = results
