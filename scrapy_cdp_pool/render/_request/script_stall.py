"""Whether a render that ran out of time did so because the page's own
JavaScript never yields (``for(;;){}``), on Chromium: then the request fails
as :class:`~scrapy_cdp_pool.errors.PageScriptStalled` (not retried) instead
of a retried timeout.

How it is told, measured on Chromium 156 (see docs/resilience.md): a page's
``Runtime.evaluate`` runs on its renderer's main thread. A page waiting on the
network (a slow image, a slow XHR) answers ``1`` within a few milliseconds; a
page stuck in a script answers nothing. But Chromium holds every command to
the page's renderer while a main-frame navigation is pending, so a page whose
document has not arrived, or that is navigating again, answers nothing either:
the probe is sent only when the current document has committed and no
navigation is pending (:class:`~scrapy_cdp_pool.render._page.document.DocumentTracker`),
else the timeout stays what it was.

A page's commands pass through the browser process too, so a browser swamped
by another page (a ``window.open`` storm, 1,000 frames) answers no probe of
any of its pages: a browser-level command (``Browser.getVersion``) is sent
beside the probe, and when it gets no answer either, or the browser restarts
while the page is probed, the page is not named: the request fails as
:class:`~scrapy_cdp_pool.errors.BrowserUnresponsive`, retried like a timeout.

A page that never reached its ``wait_until`` by the navigation timeout (its
script stuck while the document is parsed or in its load handler) has its DOM
read within the action timeout rather than the rest of ``download_timeout``
(:func:`read_dom`): a stuck main thread holds the read, which then runs out
and the page is probed (before, such a page held its request for the whole
``download_timeout``, 180 s by default).

The probe is sent only once a deadline has been hit, so a page that renders in
time costs nothing; a stalled page holds its slot for :data:`PROBE_TIMEOUT_S`
more. Once named, the script is stopped (``Runtime.terminateExecution``,
answered even by a busy page): a failure snapshot can then read the page, and
its context is disposed as for any failed render.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy_cdp_pool.browser.pool.lease import ContextLease
from scrapy_cdp_pool.errors import (
    BrowserUnresponsive,
    CDPConnectionClosed,
    CDPError,
    CDPTimeoutError,
    PageScriptStalled,
)
from scrapy_cdp_pool.render._page.document import DocumentTracker
from scrapy_cdp_pool.render._page.page import Page

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.script_stall")

PROBE_TIMEOUT_S = 1.0
"""Seconds the page's main thread is given to answer ``1`` once a deadline
has passed. An idle renderer answered in 1 to 8 ms on a shared 2-core machine."""

TERMINATED_PROBE_TIMEOUT_S = 3.0
"""Seconds the main thread is given to answer once its script was stopped
before it is called busy outside any script. Stopping a script and
answering took over 1 s under load (four Chromium crawls beside it on 2
cores): with 1 s, a stopped busy loop was misnamed as such."""

#: what ran out of time: the deadline's cancellation, a timeout raised in the render
DEADLINE_ERRORS = (TimeoutError, CDPTimeoutError, asyncio.CancelledError)


async def read_dom(lease: ContextLease, page: Page) -> str:
    """``page.read_html``, until :func:`read_until`.

    :raises TimeoutError: a page that never reached its ``wait_until`` was
        not read within the action timeout (named; probed by the caller)."""
    spec = page.spec
    until = read_until(lease, page)
    try:
        return await page.read_html(spec.action_timeout_s, read_until=until)
    except CDPTimeoutError as e:
        if until is not None:
            raise
        raise TimeoutError(
            f"no {spec.wait_until} event within the navigation timeout "
            f"(CDP_POOL_NAVIGATION_TIMEOUT_SECONDS, meta['cdp_navigation_timeout']), then its "
            f"DOM not read within the action timeout of {spec.action_timeout_s:g} s "
            "(CDP_POOL_ACTION_TIMEOUT_SECONDS)"
        ) from e


def read_until(lease: ContextLease, page: Page) -> float | None:
    """Until when the read of the page's DOM may take (event-loop time): the
    request's deadline, so a big page's serialization has the rest of its
    ``download_timeout``; but on a backend that probes stalled scripts
    (Chromium), a page that never reached its ``wait_until`` (its load
    event, or ``DOMContentLoaded``) is read within the action timeout
    (``None``), then probed
    (:mod:`~scrapy_cdp_pool.render._request.script_stall`): its main thread
    may be stuck in a script (``for(;;){}`` while parsed or in its load
    handler), which holds the read. Before, such a page held its request for
    the whole ``download_timeout`` whatever ``CDP_POOL_NAVIGATION_TIMEOUT_SECONDS``
    and ``CDP_POOL_ACTION_TIMEOUT_SECONDS`` said."""
    tracker = page.tracker
    if page.spec.wait_until == "domcontentloaded":
        reached = tracker.dom_content_loaded
    else:
        reached = tracker.loaded
    if reached or not lease.info.backend.probes_stalled_scripts:
        return lease.deadline
    return None


def may_probe(tracker: DocumentTracker) -> bool:
    """Whether the page shows a committed HTML document with no navigation
    pending: only then does its main thread answer a probe when it is free."""
    document = tracker.document
    return (
        document is not None
        and document.body is None
        and tracker.committed
        and not tracker.navigation_pending
        and tracker.crashed is None
    )


async def stalled_script(
    lease: ContextLease, page: Page, error: BaseException
) -> PageScriptStalled | BrowserUnresponsive | None:
    """:class:`PageScriptStalled` when ``error`` (one of
    :data:`DEADLINE_ERRORS`, raised by the render of ``page``) came while the
    page's main thread is stuck in JavaScript: it did not answer ``1`` within
    :data:`PROBE_TIMEOUT_S` seconds while the browser answered
    ``Browser.getVersion``. :class:`BrowserUnresponsive` (retried) when the
    browser did not answer either, or restarted meanwhile: the page is not
    the cause; also when the page cannot be asked (see :func:`may_probe`: its
    document not in yet, a navigation pending) and the browser alone is asked
    and does not answer (before, a frozen browser then counted as a plain
    timeout). ``None`` when the page answered, or could not be
    asked while the browser answered, the backend tells stalls its own way
    (Lightpanda's watchdog), or ``error`` is a cancellation other than the
    lease's deadline (the crawl stopping)."""
    if not lease.info.backend.probes_stalled_scripts:
        return None
    if isinstance(error, asyncio.CancelledError) and not lease.deadline_passed():
        return None
    if not may_probe(page.tracker):
        return await _browser_unresponsive(lease, page, error)
    answers: tuple[dict[str, Any] | BaseException, ...] = await asyncio.gather(
        page.command("Runtime.evaluate", {"expression": "1"}, PROBE_TIMEOUT_S),
        lease.cdp.send("Browser.getVersion", None, None, PROBE_TIMEOUT_S),
        return_exceptions=True,
    )
    probe, browser = answers
    if not isinstance(probe, BaseException):
        return None
    if not isinstance(probe, CDPTimeoutError):
        if isinstance(probe, CDPError):
            return None  # closed or refused: not a stall the probe can tell
        raise probe
    limit = _limit(error)
    if isinstance(browser, BaseException):
        if not isinstance(browser, CDPError):
            raise browser
        return _unresponsive(page, limit, f"nor did the browser ({browser})")
    try:
        freed = await _terminate(page)
    except CDPConnectionClosed as closed:
        return _unresponsive(page, limit, f"and the browser restarted meanwhile ({closed})")
    if freed:
        what = "the page's script did not yield"
    else:  # still busy once scripts were stopped: found by a fresh-user trial
        what = (
            "the page's main thread stayed busy outside any script (parsing or laying out "
            "a document too large for the deadline)"
        )
    return PageScriptStalled(
        f"{page.spec.url}: {what} within {limit} on Chromium: its main thread answered "
        f"no command for {PROBE_TIMEOUT_S:g} s more while the browser answered; stopped, "
        "not retried"
    )


async def _browser_unresponsive(
    lease: ContextLease, page: Page, error: BaseException
) -> BrowserUnresponsive | None:
    """The page cannot be probed: :class:`BrowserUnresponsive` when the
    browser does not answer ``Browser.getVersion`` within
    :data:`PROBE_TIMEOUT_S` either (it timed out, or its connection closed:
    restarted), else ``None`` (the timeout stays what it was)."""
    try:
        await lease.cdp.send("Browser.getVersion", None, None, PROBE_TIMEOUT_S)
    except (CDPTimeoutError, CDPConnectionClosed) as e:
        return BrowserUnresponsive(
            f"{page.spec.url}: no response within {_limit(error)} on Chromium, and the browser "
            f"answered no command for {PROBE_TIMEOUT_S:g} s more ({e}): the browser as a whole "
            "was unresponsive (frozen, swamped by another page, or restarting); retried"
        )
    except CDPError:
        return None
    return None


def _limit(error: BaseException) -> str:
    """The deadline ``error`` says was hit, as the messages name it."""
    if isinstance(error, asyncio.CancelledError):
        return "download_timeout"
    return f"its deadline ({error})" if str(error) else "its deadline"


def _unresponsive(page: Page, limit: str, browser: str) -> BrowserUnresponsive:
    return BrowserUnresponsive(
        f"{page.spec.url}: no response within {limit} on Chromium; the page answered no "
        f"command for {PROBE_TIMEOUT_S:g} s more, {browser}: the browser as a whole was "
        "unresponsive (another page swamping it, or a restart), so this page is not "
        "named stalled; retried"
    )


async def _terminate(page: Page) -> bool:
    """Stop the page's running script (its context is disposed after) and
    tell whether that freed its main thread: it answers a probe within
    :data:`TERMINATED_PROBE_TIMEOUT_S` seconds. ``False`` for a thread busy outside any
    script (a 100,000-element document without scripts, with a 5 s deadline).

    :raises CDPConnectionClosed: the connection closed meanwhile (the browser
        restarted)."""
    try:
        await page.command("Runtime.terminateExecution", None, TERMINATED_PROBE_TIMEOUT_S)
        await page.command("Runtime.evaluate", {"expression": "1"}, TERMINATED_PROBE_TIMEOUT_S)
    except CDPTimeoutError:
        return False
    except CDPConnectionClosed:
        raise  # the browser restarted: nothing was told about the page
    except CDPError as e:
        logger.debug("%s: Runtime.terminateExecution: %r", page.spec.url, e)
    return True
