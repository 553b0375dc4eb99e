"""One page (target) in one fresh browser context, attached as a flat session:
navigate, wait until settled, run scripts for actions, read the DOM. It is
opened (or a kept one taken over) by :mod:`scrapy_cdp_pool.render._page.page_setup`.

Its ``Fetch`` pauses are answered by
:class:`~scrapy_cdp_pool.render._page.interception.FetchInterceptor`;
what the main frame shows is kept by
:class:`~scrapy_cdp_pool.render._page.document.DocumentTracker`;
dialogs are answered by :class:`~scrapy_cdp_pool.render._page.dialogs.DialogAnswerer`,
requests in flight counted by
:class:`~scrapy_cdp_pool.render._page.network_idle.NetworkActivity`, navigations to
other schemes kept from the tracker by
:class:`~scrapy_cdp_pool.render._page.navigation_schemes.SchemeFilter`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from scrapy_cdp_pool.browser.backends import CHROMIUM, Backend
from scrapy_cdp_pool.browser.cdp import (
    CDPConnection,
    CDPConnectionClosed,
    CDPError,
    CDPProtocolError,
)
from scrapy_cdp_pool.errors import (
    FirstByteTimeout,
    NavigationFailed,
    NavigationLoop,
    NavigationToOtherScheme,
    PageCrashed,
    PageScriptError,
    is_data_loss,
)
from scrapy_cdp_pool.render._page.body_size import BodySizeGuard, navigation_too_large
from scrapy_cdp_pool.render._page.capture import NetworkCapture
from scrapy_cdp_pool.render._page.child_frames import ChildFrames
from scrapy_cdp_pool.render._page.console import ConsoleLog
from scrapy_cdp_pool.render._page.dialogs import DialogAnswerer
from scrapy_cdp_pool.render._page.document import DocumentTracker, is_context_gone
from scrapy_cdp_pool.render._page.events import EventHandler, EventRouter
from scrapy_cdp_pool.render._page.interception import TOO_LARGE, FetchInterceptor
from scrapy_cdp_pool.render._page.navigation_schemes import NAVIGATION_EVENTS, SchemeFilter
from scrapy_cdp_pool.render._page.network_idle import NetworkActivity
from scrapy_cdp_pool.render._page.page_scripts import (
    PARSER_CAUGHT_UP,
    READ_HTML,
    READ_HTML_WITH_SHADOW_ROOTS,
)
from scrapy_cdp_pool.render._page.response_log import ResponseLog
from scrapy_cdp_pool.render._request.spec import RenderSpec

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.page")


class Page:
    """A target in a browser context, driven through one CDP session.

    Create with :func:`~scrapy_cdp_pool.render._page.page_setup.open_page` (or
    :func:`~scrapy_cdp_pool.render._page.page_setup.take_over_page`). ``tracker``
    holds what the main frame shows.
    """

    def __init__(
        self,
        cdp: CDPConnection,
        target_id: str,
        session_id: str,
        spec: RenderSpec,
        backend: Backend = CHROMIUM,
    ) -> None:
        self.cdp = cdp
        self.target_id = target_id
        self.session_id = session_id
        self.spec = spec
        self.backend = backend
        self.tracker = DocumentTracker(main_frame_id=target_id)
        #: the main frame's URL, same-document navigations included
        self.frame_url = ""
        waited = tuple(a.args[0] for a in spec.actions if a.name == "wait_for_response")
        #: the responses ``wait_for_response`` actions wait for
        self.responses = ResponseLog(waited) if waited else None
        self.interceptor = FetchInterceptor(self)
        self.dialogs = DialogAnswerer(
            self, accept=spec.dialogs == "accept", browser_answers=backend.answers_dialogs
        )
        self.network = NetworkActivity()
        self.schemes = SchemeFilter(target_id)
        #: origins of the documents this page loaded (main frame and frames),
        #: whose storage is cleared before the page is reused
        self.origins: set[str] = set()
        #: its child frames: one of another origin keeps the page from reuse
        self.child_frames = ChildFrames(target_id)
        #: set by ``Page.frameStoppedLoading`` of the main frame
        self.stopped_loading = asyncio.Event()
        #: an error that ends the render as soon as it is seen (the response or
        #: the rewritten request too large)
        #: why the render ends early (a body past maxsize, a request too large,
        #: a navigation robots.txt forbids), raised where the render waits
        self.too_large: Exception | None = None
        self.capture = NetworkCapture(self, spec.capture) if spec.capture is not None else None
        #: the main document's body counted as it arrives (``DOWNLOAD_MAXSIZE``)
        self.body_size = BodySizeGuard(spec.url, spec.maxsize)
        #: the server's HTTP cache ignores cookies: keep ``Vary: Cookie``
        #: responses out of it (see ``FetchInterceptor``)
        self.guard_cache = False
        #: per-request commands in force on the page (method -> params), for
        #: the next request of a kept page to skip those that are unchanged
        self.applied: dict[str, dict[str, Any]] = {}
        #: the setup's answers when the navigation went out in the same write
        #: (awaited by :meth:`navigate`)
        self.pending_setup: asyncio.Future[list[dict[str, Any]]] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.started_at = time.monotonic()
        self.console = ConsoleLog(self.started_at) if spec.console else None
        cdp.subscribe(session_id, self._route_events().dispatch)

    def command(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> Coroutine[Any, Any, dict[str, Any]]:
        """Queue a command to this page's session now and return a coroutine
        that waits for its answer (see :meth:`CDPConnection.post`)."""
        return self.cdp.post(method, params, self.session_id, timeout_s)

    def fail(self, error: Exception) -> None:
        """End the render with ``error`` (raised by :meth:`wait_settled`): a
        :class:`RenderError`, a ``CDPRequestTooLarge``, or what a render hook
        raised (``RenderHooks.before_leaving``)."""
        self.too_large = error
        self.tracker.on_failure(str(error))

    def detach(self) -> None:
        """Stop handling events; pending pause handlers are cancelled."""
        self.cdp.unsubscribe(self.session_id)
        for task in self._tasks:
            task.cancel()
        if self.capture is not None:
            self.capture.cancel()

    async def navigate(self, timeout_s: float) -> None:
        """Navigate to the spec's URL and wait until the page is settled
        (``wait_until``). A page whose document arrived but whose load event
        did not within ``timeout_s`` seconds is taken as it is.

        :raises NavigationFailed: the browser could not load the URL.
        :raises TimeoutError: no main document within ``timeout_s`` seconds,
            or within the spec's ``first_byte_timeout_s`` when longer (a
            ``download_timeout`` the user set, :class:`FirstByteTimeout`).
        """
        self.tracker.navigation_pending = True
        # Chromium answers Page.navigate once the response has come: a slow
        # site's answer is bounded by the navigation's deadline (a little
        # later, so that the named TimeoutError below wins), not by
        # CDP_POOL_COMMAND_TIMEOUT_SECONDS (before: a site answering after
        # 30 s failed whatever the navigation timeout said).
        first_byte_s = max(timeout_s, self.spec.first_byte_timeout_s or 0.0)
        navigate = asyncio.ensure_future(
            self.command("Page.navigate", {"url": self.spec.url}, first_byte_s + 1.0)
        )
        navigate.add_done_callback(self._on_navigate_answer)
        try:
            if self.pending_setup is not None:
                setup, self.pending_setup = self.pending_setup, None
                await setup
            try:
                await self.wait_settled(self.spec.wait_until, timeout_s)
            except TimeoutError:
                if self.tracker.document is not None or first_byte_s <= timeout_s:
                    raise
                # a longer download_timeout the user set: the first byte may take it
                await self._first_byte(first_byte_s - timeout_s, first_byte_s)
                await self.wait_settled(self.spec.wait_until, timeout_s)
        except TimeoutError as e:
            if isinstance(e, FirstByteTimeout):
                raise
            if self.tracker.document is None:
                # Named: the handler would otherwise blame download_timeout.
                raise TimeoutError(
                    f"{self.spec.url}: no response within the navigation timeout of "
                    f"{timeout_s:g} s (CDP_POOL_NAVIGATION_TIMEOUT_SECONDS, "
                    'meta["cdp_navigation_timeout"])'
                ) from e
            logger.debug(
                "%s: no load event within %.1f s; reading the page as is", self.spec.url, timeout_s
            )
        finally:
            if not navigate.done():
                navigate.cancel()

    async def _first_byte(self, more_s: float, first_byte_s: float) -> None:
        """Wait ``more_s`` seconds more for the main document's response (or a
        failure, a crash), past the navigation timeout.

        :raises TimeoutError: none came, named by the ``download_timeout`` of
            ``first_byte_s`` seconds that decided the wait.
        """
        tracker = self.tracker
        try:
            async with asyncio.timeout(more_s):
                while tracker.document is None and not tracker.failure and not tracker.crashed:
                    tracker.changed.clear()
                    await tracker.changed.wait()
        except TimeoutError:
            raise FirstByteTimeout(
                f"{self.spec.url}: no response within download_timeout = {first_byte_s:g} s "
                "(longer than the navigation timeout, so it decided the wait for the first byte)"
            ) from None

    def _on_navigate_answer(self, future: asyncio.Future[dict[str, Any]]) -> None:
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            if not isinstance(error, CDPConnectionClosed):
                self.tracker.on_failure(str(error))
            return
        error_text = future.result().get("errorText")
        too_large = navigation_too_large(self.spec.url, error_text, self.spec.maxsize)
        if too_large is not None:
            self.fail(too_large)
        elif error_text and self.tracker.document is None:
            self.tracker.on_failure(str(error_text))

    async def wait_settled(self, wait_until: str, timeout_s: float) -> None:
        """Wait until :meth:`DocumentTracker.settled` (``"networkidle"``: the
        load event, then no request in flight for 500 ms, see
        :mod:`~scrapy_cdp_pool.render._page.network_idle`).

        :raises RenderError: :class:`NavigationFailed`, :class:`PageCrashed`,
            :class:`NavigationToOtherScheme` or :class:`NavigationLoop`, as
            soon as they happen.
        :raises TimeoutError: after ``timeout_s`` seconds.
        """
        tracker = self.tracker
        state = "load" if wait_until == "networkidle" else wait_until
        async with asyncio.timeout(timeout_s):
            while True:
                self._raise_if_ended()
                tracker.changed.clear()
                if tracker.settled(state):
                    if state == wait_until or await self._network_idle_or_change():
                        if tracker.dataloss:
                            await self._parser_caught_up(timeout_s)
                        return
                    continue
                await tracker.changed.wait()

    def _raise_if_ended(self) -> None:
        """Raise why the render ends now, if it does (see :meth:`wait_settled`);
        a body cut short under ``DOWNLOAD_FAIL_ON_DATALOSS = False`` is
        accepted as the page."""
        tracker = self.tracker
        if self.too_large is not None:
            raise self.too_large
        if tracker.documents > self.spec.max_self_navigations + 1:
            raise NavigationLoop(
                f"{self.spec.url}: the page navigated itself {tracker.documents - 1} "
                f"times in a row, more than REDIRECT_MAX_TIMES = "
                f"{self.spec.max_self_navigations} (a navigation loop); not retried"
            )
        if tracker.crashed:
            # A connection closed for what its server sent fails by that name.
            raise self.cdp.close_error() or PageCrashed(f"{self.spec.url}: {tracker.crashed}")
        if self.schemes.left_for is not None:
            raise NavigationToOtherScheme(self.spec.url, self.schemes.left_for)
        too_large = navigation_too_large(self.spec.url, tracker.failure, self.spec.maxsize)
        if too_large is not None:
            raise too_large
        if tracker.failure and tracker.document is None:
            raise NavigationFailed(self.spec.url, tracker.failure)
        if tracker.body_lost:  # Scrapy's data loss (see boundary)
            if self.spec.fail_on_dataloss or not is_data_loss(tracker.body_lost):
                raise NavigationFailed(self.spec.url, tracker.body_lost)
            # DOWNLOAD_FAIL_ON_DATALOSS = False: what arrived is the page
            tracker.accept_data_loss()

    async def _parser_caught_up(self, timeout_s: float) -> None:
        """Let the HTML parser insert what arrived of a document cut short:
        Chromium stops loading it before its parser has run on the last
        bytes (measured: the last paragraph's text missing when read at
        ``Page.frameStoppedLoading``), and fires no load event to wait for.
        The page's DOM is read once its size stayed the same over three
        checks 10 ms apart (at most 100 checks): two turns of its task queue
        were not always enough on a loaded machine (the paragraph missing
        once in a fresh-clone suite run)."""
        await self.evaluate(PARSER_CAUGHT_UP, min(timeout_s, 5.0))

    async def _network_idle_or_change(self) -> bool:
        """Wait until the network is idle (True) or the tracker changed
        (False: a new navigation, a crash...)."""
        idle = asyncio.ensure_future(self.network.wait_idle())
        changed = asyncio.ensure_future(self.tracker.changed.wait())
        try:
            await asyncio.wait({idle, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()
            changed.cancel()
        return idle.done() and not idle.cancelled() and not self.tracker.changed.is_set()

    async def wait_for_load(self, state: str, timeout_s: float) -> None:
        await self.wait_settled(state, timeout_s)

    async def settle(self, timeout_s: float) -> None:
        """After an action: if it started a navigation, wait for the new page.

        First let the page's event loop turn once (a ``setTimeout(0)`` promise):
        Lightpanda schedules a click's navigation on its next turn, Chromium
        reports it at once; either way the navigation events arrive before the
        answer, or the answer is an error because the page already went away.
        """
        try:
            await self.command(
                "Runtime.evaluate",
                {"expression": "new Promise(r => setTimeout(r, 0))", "awaitPromise": True},
                timeout_s,
            )
        except CDPProtocolError as e:
            logger.debug("%s: the page navigated during an action: %s", self.spec.url, e)
        if not self.tracker.settled("load"):
            await self.wait_settled("load", timeout_s)

    async def evaluate(self, expression: str, timeout_s: float) -> Any:
        """Evaluate JavaScript in the page (promises awaited) and return its
        JSON value.

        :raises PageScriptError: the script threw.
        """
        result = await self.command(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout_s,
        )
        details = result.get("exceptionDetails")
        if details:
            exception = details.get("exception") or {}
            message = exception.get("description") or details.get("text") or "script error"
            raise PageScriptError(str(message).splitlines()[0])
        return result.get("result", {}).get("value")

    async def read_html(self, timeout_s: float, read_until: float | None = None) -> str:
        """The current document's rendered DOM, doctype included, read once
        the page's event loop turned (a navigation it schedules right after
        its load, such as a form submitted from ``onload``, has started by
        then). The read is kept only if the frame showed, all along, the
        committed document :attr:`tracker` reports (status, headers, URL):
        if the page navigated meanwhile, the new document is awaited and read,
        for at most ``timeout_s`` seconds, then read as it is. A navigation
        already pending before the read (one that never answers) does not
        hold it. ``""`` when the page went on to a raw document (its bytes
        are the body). Each read of the DOM may take until ``read_until``
        (event-loop time: the request's deadline, so a big page's
        serialization has the rest of its ``download_timeout``), or the
        ``timeout_s`` when it is ``None``.

        :raises PageScriptError: the page kept changing documents for
            ``timeout_s`` seconds.
        :raises NavigationToOtherScheme: the browser replaced the page with
            one for another scheme before it was read.
        """
        tracker = self.tracker
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        read_deadline = deadline if read_until is None else max(deadline, read_until)
        script = READ_HTML_WITH_SHADOW_ROOTS if self.spec.shadow_roots == "open" else READ_HTML
        last_chance = False
        while True:
            if tracker.document is not None and tracker.document.body is not None:
                return ""
            generation = tracker.generation
            try:
                value = await self.evaluate(script, max(0.1, read_deadline - loop.time()))
            except (CDPProtocolError, PageScriptError) as e:
                if not is_context_gone(e):
                    raise
            else:
                if self.schemes.left_for is not None:
                    # The browser replaced the page before this read (its
                    # events come before the read's answer): what was read
                    # is its own page for the other scheme (Lightpanda's
                    # "Navigation failed"), not the site's.
                    raise NavigationToOtherScheme(self.spec.url, self.schemes.left_for)
                if tracker.generation == generation and tracker.committed:
                    return str(value or "")
            if last_chance:
                raise PageScriptError(
                    f"{self.spec.url}: the page kept navigating while being read "
                    f"for {timeout_s:g} s"
                )
            try:
                await self.wait_settled("domcontentloaded", deadline - loop.time())
            except TimeoutError:
                last_chance = True  # read it as it is, if it holds still for that

    # Fetch interception -------------------------------------------------

    def _route_events(self) -> EventRouter:
        """The page's one event table (:class:`EventRouter`), in the order
        the handlers must run: the paused requests, authentication challenges
        and dialogs answered in tasks of their own; navigations to schemes
        the render does not follow, kept from everything after; then the
        network activity, the frames, the document tracker and the optional
        logs (responses waited for, capture, console)."""
        router = EventRouter()
        router.on("Fetch.requestPaused", self._spawn_handler(self.interceptor.on_paused))
        router.on("Fetch.authRequired", self._spawn_handler(self.interceptor.on_auth))
        router.on("Page.javascriptDialogOpening", self._spawn_handler(self.dialogs.on_opening))
        router.on((*NAVIGATION_EVENTS, "Page.frameNavigated"), self._on_other_scheme)
        router.on("Network.loadingFailed", self._on_other_scheme_stopped)
        router.on("Network.*", self.network.on_event)
        router.on("Network.dataReceived", lambda _, params: self._on_data(params))
        router.on("Network.requestWillBeSent", self._on_request_sent)
        router.on(("Page.frameAttached", "Page.frameNavigated"), self.child_frames.on_event)
        router.on("Page.frameNavigated", self._on_frame_navigated)
        router.on("Page.navigatedWithinDocument", self._on_navigated_within_document)
        router.on("Page.frameStoppedLoading", self._on_frame_stopped_loading)
        router.on(DocumentTracker.EVENTS, self.tracker.on_event)
        if self.responses is not None:
            router.on("Network.*", self.responses.on_event)
        if self.capture is not None:
            router.on("Network.*", self.capture.on_event)
        if self.console is not None:
            router.on("Runtime.*", self.console.on_event)
        return router

    def _spawn_handler(
        self, answer: Callable[[dict[str, Any]], Coroutine[Any, Any, None]]
    ) -> EventHandler:
        """A handler that answers its event in a task of its own (the answer
        awaits commands; events keep flowing meanwhile)."""

        def spawn(_: str, params: dict[str, Any]) -> bool:
            task = asyncio.get_running_loop().create_task(answer(params))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return True

        return spawn

    def _on_other_scheme(self, method: str, params: dict[str, Any]) -> bool:
        """A main-frame navigation to a scheme the render does not follow is
        recorded and consumed (:class:`SchemeFilter`)."""
        if self.schemes.swallow(method, params):
            self.tracker.changed.set()
            return True
        return False

    def _on_other_scheme_stopped(self, method: str, params: dict[str, Any]) -> bool:
        """Such a navigation stopped the loading document: it is as loaded as
        it will ever be."""
        if not self.schemes.stopped_loading(method, params):
            return False
        self.network.on_event(method, params)
        if self.tracker.document is not None and not self.tracker.navigation_pending:
            self.tracker.dom_content_loaded = self.tracker.loaded = True
        self.tracker.changed.set()
        return True

    def _on_request_sent(self, _: str, params: dict[str, Any]) -> None:
        if params.get("type") == "Document":
            self._note_origin(str(params.get("documentURL", "")))

    def _on_frame_navigated(self, _: str, params: dict[str, Any]) -> None:
        frame = params.get("frame") or {}
        self._note_origin(str(frame.get("url", "")))
        if frame.get("id") == self.target_id:
            self.frame_url = str(frame.get("url", ""))

    def _on_navigated_within_document(self, _: str, params: dict[str, Any]) -> None:
        if params.get("frameId") == self.target_id:
            self.frame_url = str(params.get("url", ""))
            self.tracker.changed.set()

    def _on_frame_stopped_loading(self, _: str, params: dict[str, Any]) -> None:
        if params.get("frameId") == self.target_id:
            self.stopped_loading.set()

    def _on_data(self, params: dict[str, Any]) -> None:
        """A chunk of a response's body arrived: past the request's maxsize
        for the main document, the render fails and the page stops loading
        (the failed render's context is then disposed, which ends the
        transfer)."""
        too_large = self.body_size.on_data(params)
        if too_large is None:
            if self.body_size.unbounded and self.body_size.unbounded_past_limit(params):
                self._cut_unbounded(params)
            return
        logger.debug("%s: %s; stopping the page", self.spec.url, too_large)
        self.fail(too_large)
        task = asyncio.get_running_loop().create_task(self._stop_loading())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _cut_unbounded(self, params: dict[str, Any]) -> None:
        """One of the page's own responses with no ``Content-Length`` (a
        ``fetch()``, an XHR) passed the request's maxsize while it arrives:
        the page stops loading (``Page.stopLoading``, as ``window.stop()``),
        which cancels it in Chromium (the script's read of its body fails);
        the render goes on, the response counted in
        ``cdp_pool/resources_blocked/too_large`` as one whose
        ``Content-Length`` announced it."""
        blocked = self.tracker.blocked
        blocked[TOO_LARGE] = blocked.get(TOO_LARGE, 0) + 1
        logger.debug(
            "%s: the page's own response %s passed download_maxsize (%d bytes) while it arrived; "
            "stopping the page's loads",
            self.spec.url, params.get("requestId"), self.spec.maxsize,
        )  # fmt: skip
        task = asyncio.get_running_loop().create_task(self._stop_loading())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stop_loading(self) -> None:
        try:
            await self.command("Page.stopLoading")
        except CDPError as e:
            logger.debug("%s: stopping the page: %r", self.spec.url, e)

    def _note_origin(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.netloc:
            self.origins.add(f"{parts.scheme}://{parts.netloc}")
