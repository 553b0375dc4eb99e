"""The main frame's document as the browser sees it, kept from CDP events.

:class:`DocumentTracker` is fed every event of one page session. It answers:
which main-document response is the current one (status, headers, URL), which
redirects led to it, whether a navigation is still pending, whether its load
events fired, and whether the page crashed. It sends no command itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from scrapy_cdp_pool.render._page.downloads import PageDownload

MAX_SET_COOKIE_RESPONSES = 256
"""Most responses whose ``Set-Cookie`` values a page keeps (Chromium reports
them apart from the document, see :meth:`DocumentTracker.set_cookie_values`)."""


#: the one error of a rendered document's request, after its response came,
#: that does not mean its body was lost: the page was stopped or left
BODY_KEPT_TEXT = "ERR_ABORTED"


@dataclass
class DocumentResponse:
    """One main-frame document response: final hop, not a redirect.

    ``headers`` keeps repeated headers (several ``Set-Cookie``) as separate
    pairs. ``body`` is set only for a document returned as raw bytes (JSON,
    PDF, image, attachment, 204), ``None`` for one rendered as HTML.
    """

    url: str
    status: int
    headers: list[tuple[str, str]]
    network_id: str | None
    body: bytes | None = None
    received_at: float = 0.0
    #: where it came from, when the browser says (Chromium's
    #: ``Network.responseReceived``): the server's IP address and the protocol
    #: (``"http/1.1"``, ``"h2"``...)
    remote_ip: str | None = None
    protocol: str | None = None
    #: a raw document the browser was also given to display (its bytes are
    #: the response, but the request's actions run on the page showing it)
    displayed: bool = False


#: what a script's error says when its document went away (navigated)
_CONTEXT_GONE = (
    "Execution context was destroyed",
    "Cannot find context",
    "context not found",
    "Inspected target navigated or closed",
)


def is_context_gone(error: BaseException) -> bool:
    """Whether a script's error says its document went away (navigated)."""
    return any(marker in str(error) for marker in _CONTEXT_GONE)


#: the browser's reason for a main-frame navigation (``Page.frameRequestedNavigation``)
#: as Scrapy's MetaRefreshMiddleware names it
_HOP_REASONS = {"metaTagRefresh": "meta refresh"}


@dataclass
class DocumentTracker:
    #: the event methods :meth:`on_event` handles (set below the class)
    EVENTS: ClassVar[frozenset[str]] = frozenset()

    main_frame_id: str
    document: DocumentResponse | None = None
    #: hops before the document read, ``(url redirected from, reason)``: a
    #: status the browser followed (301...), or a client-side navigation of
    #: the main frame before any action (``"meta refresh"`` as Scrapy's
    #: MetaRefreshMiddleware says, when the browser tells one (Chromium);
    #: else ``"client-side navigation"``: Lightpanda 1.0.2 reports a meta
    #: refresh and a script's ``location`` change alike, as scriptInitiated)
    redirects: list[tuple[str, int | str]] = field(default_factory=list)
    navigation_pending: bool = False
    dom_content_loaded: bool = False
    loaded: bool = False
    crashed: str | None = None
    failure: str | None = None
    blocked: dict[str, int] = field(default_factory=dict)
    #: hosts (``host:port``) of the page's requests refused by the
    #: private-network rule (render/_page/private_network.py)
    private_hosts: set[str] = field(default_factory=set)
    #: downloads the page started, stopped (render/_page/downloads.py)
    downloads: list[PageDownload] = field(default_factory=list)
    #: of them, those the browser had fetched whole before they were paused
    #: (``Backend.pauses_before_body``: Lightpanda)
    downloads_fetched_whole: int = 0
    set_cookies: dict[str, list[str]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    #: the current document replaced the previous one in the frame
    #: (``Page.frameNavigated``): only then do load events count for it
    committed: bool = False
    #: bumped by every change of which document the frame shows or will
    #: show: a DOM read is kept only if it did not change meanwhile
    generation: int = 0
    #: main-frame documents received since the render or its last action
    #: started (the first, then each the page navigated itself to)
    documents: int = 0
    #: called with each new main-document response as soon as it is known
    on_response: Callable[[DocumentResponse], None] | None = None
    #: the main frame's URL after a change within its document (``pushState``,
    #: ``replaceState``, a fragment), as Playwright's ``page.url``; ``None``:
    #: the document's own URL
    page_url: str | None = None
    #: remote addresses, protocols and TLS details of main-frame documents
    #: not yet matched to their response (by network request id)
    _connections: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: client-side navigations are recorded as hops until the first action
    hops_recorded: bool = True
    #: why the main frame's next navigation was requested, if the browser said
    next_hop_reason: str | None = None
    #: the rendered document's body failed after its response came
    #: (Chromium's error text: cut short of its Content-Length or last chunk,
    #: connection reset, a body not in its Content-Encoding...)
    body_lost: str | None = None
    #: a body cut short that the request lets through
    #: (``DOWNLOAD_FAIL_ON_DATALOSS = False``): the browser's words; the
    #: response is flagged ``dataloss``
    dataloss: str | None = None
    #: the main frame stopped loading its current document
    #: (``Page.frameStoppedLoading``)
    stopped_loading: bool = False

    def accept_data_loss(self) -> None:
        """Keep the document whose body was cut short (:attr:`body_lost`) as
        it is, flagged :attr:`dataloss`. Chromium fires no load event for such
        a document (measured: ``Network.loadingFailed`` then
        ``Page.frameStoppedLoading``, no ``load`` or ``DOMContentLoaded``), so
        once its frame stopped loading it counts as loaded."""
        self.dataloss, self.body_lost = self.body_lost, None
        self._loaded_if_cut_short()

    def cut_short(self, received: int, expected: int | None) -> None:
        """The document's body, read before the page got it, was cut short
        after ``received`` bytes (of ``expected``, its ``Content-Length``, or
        of a chunked body that failed): :attr:`body_lost` in the words
        Chromium uses for it, for the same handling (see :func:`is_data_loss
        <scrapy_cdp_pool.errors.is_data_loss>`)."""
        text = (
            "net::ERR_CONTENT_LENGTH_MISMATCH"
            if expected is not None
            else ("net::ERR_INCOMPLETE_CHUNKED_ENCODING")
        )
        of = f" of {expected}" if expected is not None else ""
        self.body_lost = f"{text} (the body was cut short after {received}{of} bytes)"

    def _loaded_if_cut_short(self) -> None:
        if self.dataloss and self.stopped_loading and self.committed:
            self.loaded = self.dom_content_loaded = True

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        """Update from one CDP event (Page, Network, Inspector, Target
        domains: those of :attr:`EVENTS`; any other is ignored)."""
        handler = _HANDLERS.get(method)
        if handler is not None and handler(self, params) is not False:
            self.changed.set()

    # One handler per event method (:data:`_HANDLERS`); ``False``: nothing
    # changed that a waiter must see.

    def _on_load_event_fired(self, _: dict[str, Any]) -> None:
        if self.document is not None and self.committed and not self.navigation_pending:
            self.loaded = True
            self.dom_content_loaded = True

    def _on_dom_content_event_fired(self, _: dict[str, Any]) -> None:
        if self.document is not None and self.committed and not self.navigation_pending:
            self.dom_content_loaded = True

    def _on_frame_stopped_loading(self, params: dict[str, Any]) -> bool:
        if params.get("frameId") != self.main_frame_id or self.document is None:
            return False
        self.stopped_loading = True
        self._loaded_if_cut_short()
        return True

    def _on_frame_navigated(self, params: dict[str, Any]) -> bool:
        frame = params.get("frame", {})
        if frame.get("id") != self.main_frame_id or frame.get("parentId"):
            return False
        # The first commit after the document's response is that document
        # (a commit needs its response): the previous one's late load
        # events no longer count.
        if self.document is not None and not self.committed:
            self.committed = True
            self.loaded = self.dom_content_loaded = False
        self.generation += 1
        return True

    def _on_navigation_announced(self, params: dict[str, Any]) -> None:
        if params.get("frameId") == self.main_frame_id and not str(
            params.get("navigationType", "")
        ).startswith("same"):
            self.navigation_pending = True
            self.generation += 1
            reason = params.get("reason")
            if reason:
                self.next_hop_reason = _HOP_REASONS.get(str(reason))

    def _on_navigated_within_document(self, params: dict[str, Any]) -> bool:
        # A fragment or History API change: no new document comes, so
        # a navigation announced without a navigationType (Chromium's
        # frameScheduledNavigation for a fragment) is over.
        if params.get("frameId") != self.main_frame_id:
            return False
        self.navigation_pending = False
        if params.get("url"):
            self.page_url = str(params["url"])
        return True

    def _on_response_received(self, params: dict[str, Any]) -> bool:
        self._note_connection(params)
        return False

    def _on_response_extra_info(self, params: dict[str, Any]) -> None:
        raw = _header(params.get("headers", {}), "set-cookie")
        if raw:
            self._keep_set_cookies(str(params.get("requestId", "")), raw.split("\n"))

    def _on_loading_failed(self, params: dict[str, Any]) -> None:
        error_text = str(params.get("errorText", ""))
        document = self.document
        if (
            document is not None
            and document.body is None
            and params.get("requestId") == document.network_id
            and BODY_KEPT_TEXT not in error_text
        ):
            self.body_lost = error_text
        if params.get("type") == "Document" and self.navigation_pending:
            self.navigation_pending = False
            if self.document is None:
                self.failure = str(params.get("errorText", "navigation failed"))

    def _on_crashed(self, _: dict[str, Any]) -> None:
        self.crashed = "the page crashed"

    def _on_detached(self, _: dict[str, Any]) -> None:
        self.crashed = "the page was closed (detached from its target)"

    def _on_connection_closed(self, params: dict[str, Any]) -> None:
        self.crashed = f"the CDP connection closed ({params.get('reason', '')})"

    def _note_connection(self, params: dict[str, Any]) -> None:
        """The document's remote address and protocol, from its
        ``Network.responseReceived`` (it may come before or after the Fetch
        pause that made the document)."""
        if params.get("type") != "Document" or params.get("frameId") != self.main_frame_id:
            return
        response = params.get("response") or {}
        connection = {
            "remote_ip": response.get("remoteIPAddress") or None,
            "protocol": response.get("protocol") or None,
        }
        self._connections[str(params.get("requestId", ""))] = connection
        document = self.document
        if document is not None and document.network_id == params.get("requestId"):
            _apply_connection(document, connection)

    def _keep_set_cookies(self, request_id: str, values: list[str]) -> None:
        """Remember one response's ``Set-Cookie`` values, at most
        :data:`MAX_SET_COOKIE_RESPONSES` responses (the oldest other than the
        current document's are forgotten): every request of a page may have
        one, a server flooding them must not grow the page without bound."""
        self.set_cookies.pop(request_id, None)
        self.set_cookies[request_id] = values
        if len(self.set_cookies) > MAX_SET_COOKIE_RESPONSES:
            keep = self.document.network_id if self.document is not None else None
            for key in self.set_cookies:  # oldest first
                if key != keep:
                    del self.set_cookies[key]
                    break

    def on_redirect(self, url: str, status: int | str) -> None:
        self.redirects.append((url, status))
        self.changed.set()

    def on_document(self, document: DocumentResponse) -> None:
        """A new main-frame document response arrived: it replaces the last one
        and its load events are awaited again. One that replaces a document
        before any action is a client-side redirect (a hop)."""
        connection = self._connections.pop(str(document.network_id or ""), None)
        if connection is not None:
            _apply_connection(document, connection)
        self._connections.clear()
        previous = self.document
        if previous is not None and self.hops_recorded:
            reason = self.next_hop_reason or "client-side navigation"
            self.redirects.append((self.page_url or previous.url, reason))
        self.next_hop_reason = None
        self.document = document
        self.documents += 1
        self.page_url = None
        self.navigation_pending = False
        self.dom_content_loaded = False
        self.loaded = document.body is not None and not document.displayed
        self.committed = False
        self.body_lost = None
        self.dataloss = None
        self.stopped_loading = False
        self.generation += 1
        self.changed.set()
        if self.on_response is not None:
            self.on_response(document)

    def on_download(self, download: PageDownload) -> None:
        """A document response was a download, stopped: the page stays, and
        a navigation of the main frame waiting for it is over."""
        self.downloads.append(download)
        self.navigation_pending = False
        self.changed.set()

    def count_navigations_from_here(self) -> None:
        """An action starts: the navigations it causes, and those after it,
        are counted from the document shown now, and are no redirects."""
        self.documents = 1 if self.document is not None else 0
        self.hops_recorded = False

    def on_failure(self, reason: str) -> None:
        self.failure = reason
        self.changed.set()

    def settled(self, wait_until: str) -> bool:
        """True when the page is ready to read: a raw document was captured, or
        the current document committed and reached ``wait_until`` with no
        navigation pending."""
        if self.document is None or self.navigation_pending:
            return False
        if self.document.body is not None and not self.document.displayed:
            return True
        return self.loaded if wait_until == "load" else self.dom_content_loaded

    def set_cookie_values(self) -> list[str]:
        """``Set-Cookie`` values of the current document, from its headers or,
        on Chromium, which hides them there, from its extra-info event."""
        if self.document is None:
            return []
        values = [v for k, v in self.document.headers if k.lower() == "set-cookie"]
        if values or self.document.network_id is None:
            return values
        return self.set_cookies.get(self.document.network_id, [])


#: :meth:`DocumentTracker.on_event`'s table: event method -> handler
_HANDLERS: dict[str, Callable[[DocumentTracker, dict[str, Any]], bool | None]] = {
    "Page.loadEventFired": DocumentTracker._on_load_event_fired,
    "Page.frameStoppedLoading": DocumentTracker._on_frame_stopped_loading,
    "Page.domContentEventFired": DocumentTracker._on_dom_content_event_fired,
    "Page.frameNavigated": DocumentTracker._on_frame_navigated,
    "Page.frameStartedNavigating": DocumentTracker._on_navigation_announced,
    "Page.frameRequestedNavigation": DocumentTracker._on_navigation_announced,
    "Page.frameScheduledNavigation": DocumentTracker._on_navigation_announced,
    "Page.navigatedWithinDocument": DocumentTracker._on_navigated_within_document,
    "Network.responseReceived": DocumentTracker._on_response_received,
    "Network.responseReceivedExtraInfo": DocumentTracker._on_response_extra_info,
    "Network.loadingFailed": DocumentTracker._on_loading_failed,
    "Inspector.targetCrashed": DocumentTracker._on_crashed,
    "Target.targetCrashed": DocumentTracker._on_crashed,
    "Target.detachedFromTarget": DocumentTracker._on_detached,
    "CDPConnection.closed": DocumentTracker._on_connection_closed,
}
DocumentTracker.EVENTS = frozenset(_HANDLERS)


def _header(headers: dict[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return str(value)
    return None


def _apply_connection(document: DocumentResponse, connection: dict[str, Any]) -> None:
    document.remote_ip = connection["remote_ip"]
    document.protocol = connection["protocol"]
