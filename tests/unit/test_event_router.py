"""render/_page/events.py: the page's one event table."""

from __future__ import annotations

from typing import Any

from scrapy_cdp_pool.render._page.document import DocumentTracker
from scrapy_cdp_pool.render._page.events import EventRouter


def test_handlers_run_in_registration_order_with_whole_domains_among_them() -> None:
    seen: list[str] = []
    router = EventRouter()
    router.on("Network.loadingFailed", lambda m, p: seen.append("exact-first"))
    router.on("Network.*", lambda m, p: seen.append("domain"))
    router.on(("Network.loadingFailed", "Page.loadEventFired"), lambda m, p: seen.append(m))
    router.dispatch("Network.loadingFailed", {})
    router.dispatch("Page.loadEventFired", {})
    router.dispatch("Network.dataReceived", {})
    router.dispatch("Runtime.consoleAPICalled", {})  # no handler: nothing runs
    assert seen == [
        "exact-first", "domain", "Network.loadingFailed", "Page.loadEventFired", "domain",
    ]  # fmt: skip


def test_a_handler_returning_true_consumes_the_event() -> None:
    seen: list[dict[str, Any]] = []
    router = EventRouter()
    router.on("Page.frameNavigated", lambda m, p: p.get("swallow") is True)
    router.on("Page.frameNavigated", lambda m, p: seen.append(p))
    router.dispatch("Page.frameNavigated", {"swallow": True})
    router.dispatch("Page.frameNavigated", {"swallow": False})
    assert seen == [{"swallow": False}]


def test_a_handler_added_after_an_event_is_seen_gets_the_next_one() -> None:
    seen: list[str] = []
    router = EventRouter()
    router.on("Page.loadEventFired", lambda m, p: seen.append("a"))
    router.dispatch("Page.loadEventFired", {})
    router.on("Page.*", lambda m, p: seen.append("b"))
    router.dispatch("Page.loadEventFired", {})
    assert seen == ["a", "a", "b"]


def test_the_tracker_ignores_events_outside_its_table_and_wakes_waiters_on_its_own() -> None:
    tracker = DocumentTracker(main_frame_id="F")
    assert "Page.loadEventFired" in DocumentTracker.EVENTS
    tracker.on_event("Runtime.consoleAPICalled", {})
    tracker.on_event("Page.frameNavigated", {"frame": {"id": "child", "parentId": "F"}})
    assert not tracker.changed.is_set()  # nothing a waiter must see
    tracker.on_event("Target.targetCrashed", {})
    assert tracker.crashed == "the page crashed"
    assert tracker.changed.is_set()
