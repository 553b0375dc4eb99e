"""One request in one fresh browser context: open a page, navigate, run the
actions, read what the browser shows. The caller's lease disposes the context.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from scrapy_cdp_pool.browser.backends import LIGHTPANDA
from scrapy_cdp_pool.browser.cdp import CDPConnectionClosed
from scrapy_cdp_pool.browser.pool.lease import ContextLease
from scrapy_cdp_pool.browser.pool.lightpanda_reports import HEAP_LIMIT, SCRIPT_STALL
from scrapy_cdp_pool.browser.pool.server_flags import lightpanda_response_cap
from scrapy_cdp_pool.errors import (
    ActionError,
    ActionTimeout,
    NavigationFailed,
    PageCrashed,
    PageMemoryExceeded,
    PageScriptError,
    PageScriptStalled,
    ResponseTooLarge,
)
from scrapy_cdp_pool.render._actions.action import Action
from scrapy_cdp_pool.render._actions.actions import (
    action_timeout_s,
    check_supported,
    run_action,
)
from scrapy_cdp_pool.render._actions.elements import deep
from scrapy_cdp_pool.render._page.body_size import check_within_cap
from scrapy_cdp_pool.render._page.document import DocumentResponse
from scrapy_cdp_pool.render._page.page import Page
from scrapy_cdp_pool.render._request.certificate import server_certificate
from scrapy_cdp_pool.render._request.cookies import browser_cookies
from scrapy_cdp_pool.render._request.opening import page_for
from scrapy_cdp_pool.render._request.redirects import is_handed_back
from scrapy_cdp_pool.render._request.script_stall import (
    DEADLINE_ERRORS,
    read_dom,
    stalled_script,
)
from scrapy_cdp_pool.render._request.spec import RenderSpec
from scrapy_cdp_pool.render._request.storage_state import render_state
from scrapy_cdp_pool.render._request.user_agent import user_agent_command

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.session")


@dataclass
class RenderResult:
    """What the browser saw.

    ``body`` is the rendered DOM as UTF-8 when ``rendered`` is true, else the
    main document's original bytes. ``headers`` are ``(name, value)`` pairs of
    the final main-document response, ``Set-Cookie`` values kept separate.
    ``redirects`` are the ``(url, status)`` hops before it. ``latency_s`` is
    seconds from navigation start to the final document's headers.
    """

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    rendered: bool
    redirects: list[tuple[str, int | str]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    blocked: dict[str, int] = field(default_factory=dict)
    #: hosts of the page's requests refused by the private-network rule
    private_hosts: list[str] = field(default_factory=list)
    #: downloads the page started, stopped (render/_page/downloads.py): how many,
    #: how many cut at the bound; their records when the request asked
    #: (``meta["cdp_downloads"]``), for ``meta["cdp_downloaded"]``
    downloads: int = 0
    downloads_cut: int = 0
    downloads_fetched_whole: int = 0
    latency_s: float = 0.0
    #: Playwright ``storageState`` of the context at the end, when the spec's
    #: context options ask to save it
    storage_state: dict[str, Any] | None = None
    #: the context's cookies at the end (CDP ``Network.Cookie`` objects), when
    #: asked for (see :func:`render`)
    cookies: list[dict[str, Any]] | None = None
    #: keys for ``response.meta`` (``cdp_dialogs_seen``,
    #: ``cdp_ignored_navigations``), set when there is something to say
    meta: dict[str, Any] = field(default_factory=dict)
    #: the captured responses (``meta["cdp_capture"]``, see render/_page/capture.py)
    network: list[dict[str, Any]] | None = None
    #: where the document came from, when the browser says (Chromium): the
    #: server's IP address, the protocol as Chromium names it
    remote_ip: str | None = None
    protocol: str | None = None
    #: the server's certificate of an HTTPS document (DER), when the browser
    #: hands it over (Chromium: render/_request/certificate.py)
    certificate: bytes | None = None
    #: console messages and page errors (``meta["cdp_console"]``, see render/_page/console.py)
    console: list[dict[str, Any]] | None = None
    #: the document's body was cut short and the request let it through
    #: (``DOWNLOAD_FAIL_ON_DATALOSS = False``): the response is flagged
    #: ``dataloss``, as Scrapy's HTTP handler flags it
    dataloss: bool = False


@dataclass
class RenderHooks:
    """What the caller of :func:`render` is told, or asked, along the way.

    ``before_navigate()`` is awaited right before the navigation starts (the
    navigation command is queued in the same event-loop step as it returns);
    an exception it raises is raised by :func:`render` at once (the page is
    disposed with the lease, never navigated). ``on_document(document)`` is
    called as soon as a main-document response's status and headers arrive,
    before its body is read or the page loads.
    """

    before_navigate: Callable[[], Awaitable[None]] | None = None
    on_document: Callable[[DocumentResponse], None] | None = None
    #: asked about each navigation of the main frame the page starts itself
    #: (a script, a meta refresh, an action's click): ``False`` refuses it
    #: before it leaves the browser (robots.txt)
    allows_navigation: Callable[[str], bool] | None = None
    #: called with no await right before a request of the main frame's
    #: document paused at the request stage (the spec's ``pause_navigations``,
    #: or every request without ``allow_private_networks``) is let go to the
    #: site; a ``CDPPoolError`` it raises fails that request in the browser and ends
    #: the render with it (a cluster worker's lease, checked again where the
    #: request leaves: it may have waited there while the worker stalled)
    before_leaving: Callable[[], None] | None = None


async def render(
    lease: ContextLease,
    spec: RenderSpec,
    hooks: RenderHooks | None = None,
    *,
    collect_cookies: bool = False,
    on_failure: Callable[[Page, BaseException], Awaitable[None]] | None = None,
) -> RenderResult:
    """Render ``spec`` in a fresh context on ``lease``'s connection.

    ``hooks``: see :class:`RenderHooks`. ``collect_cookies``: read the
    context's cookies at the end into
    :attr:`RenderResult.cookies` (the caller asks only for requests without a
    profile, which keeps its own: see the handler's ``_cookie_jar_middleware``).
    ``on_failure``: awaited with the page and the error when the render fails
    once the page is open, before the error goes on (failure snapshots).

    :raises ActionError: an action failed (names the action); not retried.
    :raises ActionUnsupported: the backend cannot perform an action (before
        any page is opened); not retried.
    :raises InvalidRequestMeta: its ``download_maxsize`` is over the response
        cap of the Lightpanda server the plugin started (see
        :mod:`~scrapy_cdp_pool.render._page.body_size`); not retried.
    :raises PageMemoryExceeded: the page went past the heap ceiling.
    :raises PageScriptStalled: Lightpanda's watchdog stopped a page script
        that kept it busy; or, on Chromium, the render ran out of time (its
        deadline, a timeout) while the page's main thread was stuck in a
        script (see :mod:`~scrapy_cdp_pool.render._request.script_stall`).
    :raises Exception: :class:`NavigationFailed`, :class:`PageCrashed`,
        :class:`ResponseTooLarge`, ``TimeoutError`` or :class:`CDPError`: see
        :mod:`scrapy_cdp_pool.errors`.
    """
    check_supported(spec.actions, lease.info.backend)
    if lease.info.backend == LIGHTPANDA and not lease.config.endpoints:
        cap = lightpanda_response_cap(lease.config)
        if cap is not None:
            check_within_cap(spec.url, spec.maxsize, *cap)
    options = spec.context
    page, key = await page_for(lease, spec, user_agent_command(spec, lease.info))
    lease.page_opened(page, key, options.storage_cookies() if options is not None else None)
    if hooks is not None:
        page.tracker.on_response = hooks.on_document
        page.interceptor.allows_navigation = hooks.allows_navigation
        page.interceptor.before_leaving = hooks.before_leaving
    try:
        try:
            return await _named_failure_first(
                page, _render_page(lease, page, spec, collect_cookies, hooks)
            )
        except (PageCrashed, CDPConnectionClosed) as e:
            named = await _named_crash(lease, page)
            if named is None:
                raise
            raise named from e
        except DEADLINE_ERRORS as e:
            stalled = await stalled_script(lease, page, e)  # or BrowserUnresponsive
            if stalled is None:
                raise
            raise stalled from e
    except BaseException as error:
        if on_failure is not None:
            await on_failure(page, error)
        raise
    finally:
        page.detach()


async def _named_failure_first(page: Page, rendering: Awaitable[RenderResult]) -> RenderResult:
    """``rendering``'s result; when it fails after the page was failed by
    name (:meth:`Page.fail`: a navigation robots.txt forbids, one to a private
    network, a document past its maxsize), that named error instead. An
    action waiting in the page when its own navigation was refused fails
    with what the refusal did to the page (Lightpanda: ``Execution context
    was destroyed``, a retried ``DownloadFailedError``; before, the request
    was fetched 3 times and never named ``NavigationForbidden``)."""
    try:
        return await rendering
    except Exception as e:
        named = page.too_large
        if named is None or e is named:
            raise
        raise named from e


def _actions_to_run(page: Page) -> tuple[Action, ...]:
    """The spec's actions, or none for a redirect handed back to Scrapy (they
    run on the page it leads to)."""
    document = page.tracker.document
    if document is not None and is_handed_back(document.status, document.headers):
        return ()
    return page.spec.actions


async def _run_actions(page: Page, spec: RenderSpec) -> list[Any]:
    """The request's actions on the page (none on a signed-out one), in
    order, and their results.

    :raises ActionError: an action failed, or the page is a raw document the
        browser does not display (an image, a PDF...: a text, JSON or XML one
        is displayed for the actions, see ``DocumentResponse.displayed``).
    :raises ActionTimeout: an action ran out of its timeout.
    """
    results: list[Any] = []
    actions = _actions_to_run(page)
    if actions and await _signed_out(page, spec):
        actions = ()
    for index, action in enumerate(actions):
        document = page.tracker.document
        if document is not None and document.body is not None and not document.displayed:
            raise ActionError(
                f"{spec.url}: action #{index} {action.describe()}: the page is not HTML"
            )
        try:
            results.append(await run_action(page, action, spec.action_timeout_s))
        except (PageScriptError, ValueError) as e:
            raise ActionError(f"{spec.url}: action #{index} {action.describe()}: {e}") from e
        except TimeoutError as e:
            why = f": {e}" if str(e) else ""  # what the action waited for, when it says
            seconds = action_timeout_s(action, spec.action_timeout_s)
            raise ActionTimeout(
                f"{spec.url}: action #{index} {action.describe()} timed out{why} (after "
                f"{seconds:g} s, the action's timeout: its timeout argument, else "
                "CDP_POOL_ACTION_TIMEOUT_SECONDS)"
            ) from e
    return results


async def _render_page(
    lease: ContextLease,
    page: Page,
    spec: RenderSpec,
    collect_cookies: bool,
    hooks: RenderHooks | None,
) -> RenderResult:
    options = spec.context
    if hooks is not None and hooks.before_navigate is not None:
        await hooks.before_navigate()
    await page.navigate(spec.navigation_timeout_s)
    results = await _run_actions(page, spec)
    tracker = page.tracker
    # The DOM, then the document it was read from (the page may have
    # navigated on after its load: status, headers and body of one document).
    html = await read_dom(lease, page)
    # What follows reads a page that may be big (its cookies, storage, capture):
    # the rest of the request's download_timeout, not an action's timeout.
    finish_s = _remaining_s(lease, spec.action_timeout_s)
    document, body, rendered = _document_and_body(page, html)
    storage_state = None
    if options is not None and options.save_state and not spec.include_page:
        # a live page's is read when the callback closes it (render/_request/storage_state.py)
        storage_state = await render_state(lease.cdp, lease.context_id, page, options, finish_s)
    network = None
    if page.capture is not None:
        network = await page.capture.collect(finish_s)
    certificate = await server_certificate(page, lease.info.backend, document.url, finish_s)
    cookies = await _read_cookies_and_finish(lease, page, collect_cookies, finish_s)
    headers = [(k, v) for k, v in document.headers if k.lower() != "set-cookie"]
    headers.extend(("Set-Cookie", value) for value in tracker.set_cookie_values())
    result = RenderResult(
        remote_ip=document.remote_ip,
        protocol=document.protocol,
        certificate=certificate,
        url=tracker.page_url or document.url,
        status=document.status,
        headers=headers,
        body=body,
        rendered=rendered,
        redirects=list(tracker.redirects),
        results=results,
        blocked=dict(tracker.blocked),
        private_hosts=sorted(tracker.private_hosts),
        downloads=len(tracker.downloads),
        downloads_cut=sum(1 for d in tracker.downloads if d.truncated),
        downloads_fetched_whole=tracker.downloads_fetched_whole,
        latency_s=document.received_at - page.started_at,
        storage_state=storage_state,
        cookies=cookies,
        meta=_result_meta(page, document),
        network=network,
        console=page.console.messages() if page.console is not None else None,
        dataloss=tracker.dataloss is not None,
    )
    return result


def _document_and_body(page: Page, html: str) -> tuple[DocumentResponse, bytes, bool]:
    """The document the DOM ``html`` was read from, its body (its own bytes
    for a raw document, else the DOM) and whether it was rendered.

    :raises ResponseTooLarge: past maxsize (while it was read, or the DOM).
    :raises PageCrashed: no document. :raises NavigationFailed: status 0.
    """
    spec = page.spec
    if page.too_large is not None:  # past maxsize while it was read (a slow stream)
        raise page.too_large
    document = page.tracker.document
    if document is None:  # navigate() returns with a document or raises
        raise PageCrashed(f"{spec.url}: no document")
    if document.status == 0:
        # Lightpanda, for a connection the server dropped before its status
        # line or mid-body (an abort): a failed download, never an empty 200
        raise NavigationFailed(spec.url, "the connection was lost before a response (status 0)")
    if document.body is not None:
        return document, document.body, False
    body = html.encode("utf-8")
    if spec.maxsize and len(body) > spec.maxsize:
        raise ResponseTooLarge(spec.url, len(body), spec.maxsize, expected=False)
    return document, body, True


def _result_meta(page: Page, document: DocumentResponse) -> dict[str, Any]:
    """What the render adds to ``response.meta`` (``cdp_dialogs_seen``...)."""
    tracker = page.tracker
    meta: dict[str, Any] = {"cdp_dialogs_seen": list(page.dialogs.seen)}
    if tracker.page_url is not None and tracker.page_url != document.url:
        meta["cdp_document_url"] = document.url  # the page's URL changed within it
    if page.schemes.ignored:
        meta["cdp_ignored_navigations"] = list(page.schemes.ignored)
    if page.spec.downloads:
        meta["cdp_downloaded"] = [d.as_meta() for d in tracker.downloads]
    return meta


def _remaining_s(lease: ContextLease, at_least_s: float) -> float:
    """Seconds left before the request's deadline (``lease.deadline``), and
    never less than ``at_least_s`` (no deadline: ``at_least_s``)."""
    if lease.deadline is None:
        return at_least_s
    return max(at_least_s, lease.deadline - asyncio.get_running_loop().time())


async def _read_cookies_and_finish(
    lease: ContextLease, page: Page, collect_cookies: bool, timeout_s: float
) -> list[dict[str, Any]] | None:
    """The context's cookies when ``collect_cookies`` (else ``None``), then
    the render finished (:meth:`ContextLease.render_finished`: a page to keep
    is stopped), its session storage cleared in the same round trip as the
    cookie read. A page that loaded a frame of another origin is not kept
    (see render/_page/child_frames.py)."""
    reading = asyncio.ensure_future(browser_cookies(page, timeout_s)) if collect_cookies else None
    page.dialogs.leaving = True  # a page to keep is left for about:blank now
    try:
        return await lease.render_finished(
            page.stopped_loading, alongside=reading, keepable=not page.child_frames.foreign
        )
    finally:
        if reading is not None and not reading.done():
            reading.cancel()


async def _signed_out(page: Page, spec: RenderSpec) -> bool:
    """Whether the page just loaded matches the profile's signed-out rule
    (its URL, or an element in the DOM): then the actions are skipped and
    the page returned as it is, for the profile middleware to sign in and
    retry, instead of actions waiting on a login page."""
    rule = spec.signed_out
    document = page.tracker.document
    if rule is None or document is None:
        return False
    matched = rule.matches_url(document.url)
    if not matched and rule.selector is not None and document.body is None:
        expression = deep(f"document.querySelector({json.dumps(rule.selector)}) !== null")
        try:
            matched = bool(await page.evaluate(expression, spec.action_timeout_s))
        except PageScriptError:
            matched = False  # a selector the browser does not parse: the middleware checks
    if matched:
        logger.debug("%s: signed out (%s); actions skipped", spec.url, rule.describe())
    return matched


async def _named_crash(
    lease: ContextLease, page: Page
) -> PageMemoryExceeded | PageScriptStalled | None:
    """Why the page crashed or its connection closed, when the browser the
    plugin started tells: past ``CDP_POOL_PAGE_HEAP_LIMIT_MB`` (see
    :mod:`~scrapy_cdp_pool.browser.pool.heap_limit`), or a script stopped by
    Lightpanda's watchdog (see :mod:`~scrapy_cdp_pool.browser.pool.lightpanda_reports`);
    else ``None`` (the crash stays what it was)."""
    if lease.config.endpoints:
        return None  # someone else's server: its reasons are not seen
    limit = lease.config.page_heap_limit_mb
    url = page.spec.url
    reports = lease.connection.reports
    if lease.info.backend.crashes_told_on_stderr and reports is not None:
        urls = {url}
        if page.tracker.document is not None:
            urls.add(page.tracker.document.url)
        report = await reports.reported(urls)
        if report is None:
            return None
        if report.kind == SCRIPT_STALL:
            busy = f" for {report.stalled_ms} ms" if report.stalled_ms is not None else ""
            return PageScriptStalled(
                f"{url}: a page script kept Lightpanda busy{busy} without returning; its "
                "watchdog (--watchdog-ms) stopped it; not retried"
            )
        if report.kind != HEAP_LIMIT or limit is None:
            return None
    elif limit is None or page.tracker.crashed != "the page crashed":
        return None
    return PageMemoryExceeded(
        f"{url}: the page crashed at its JavaScript heap ceiling "
        f"(CDP_POOL_PAGE_HEAP_LIMIT_MB = {limit}); not retried"
    )
