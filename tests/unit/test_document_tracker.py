"""DocumentTracker: which CDP events make a page ready to read. Events are
fed by hand in the order a browser sends them; no browser."""

from __future__ import annotations

from scrapy_cdp_pool.render._page.document import DocumentResponse, DocumentTracker

FRAME = "F1"


def navigated(tracker: DocumentTracker) -> None:
    tracker.on_event("Page.frameNavigated", {"frame": {"id": FRAME}})


def test_a_document_is_ready_after_its_commit_and_load_not_before() -> None:
    tracker = DocumentTracker(main_frame_id=FRAME)
    assert not tracker.settled("load")
    tracker.on_document(DocumentResponse("http://a.test/", 200, [], network_id="n1"))
    tracker.on_event("Page.loadEventFired", {})  # the previous document's late load
    assert not tracker.settled("load")
    navigated(tracker)
    tracker.on_event("Page.domContentEventFired", {})
    assert tracker.settled("domcontentloaded")
    assert not tracker.settled("load")
    tracker.on_event("Page.loadEventFired", {})
    assert tracker.settled("load")


def test_a_new_navigation_unsettles_the_page_until_its_document_arrives() -> None:
    tracker = DocumentTracker(main_frame_id=FRAME)
    tracker.on_document(DocumentResponse("http://a.test/", 200, [], network_id="n1"))
    navigated(tracker)
    tracker.on_event("Page.loadEventFired", {})
    generation = tracker.generation
    tracker.on_event("Page.frameStartedNavigating", {"frameId": FRAME, "navigationType": "href"})
    assert not tracker.settled("load")
    assert tracker.generation > generation  # a DOM read taken before is dropped
    tracker.on_event("Page.frameStartedNavigating", {"frameId": "other"})
    tracker.on_document(DocumentResponse("http://a.test/next", 200, [], network_id="n2"))
    navigated(tracker)
    tracker.on_event("Page.loadEventFired", {})
    assert tracker.settled("load")
    assert tracker.document is not None
    assert tracker.document.url == "http://a.test/next"


def test_same_document_navigations_and_child_frames_change_nothing() -> None:
    tracker = DocumentTracker(main_frame_id=FRAME)
    tracker.on_document(DocumentResponse("http://a.test/", 200, [], network_id="n1"))
    navigated(tracker)
    tracker.on_event("Page.loadEventFired", {})
    tracker.on_event(
        "Page.frameStartedNavigating", {"frameId": FRAME, "navigationType": "sameDocument"}
    )
    tracker.on_event("Page.frameNavigated", {"frame": {"id": "child", "parentId": FRAME}})
    assert tracker.settled("load")


def test_a_raw_document_is_ready_at_once() -> None:
    tracker = DocumentTracker(main_frame_id=FRAME)
    tracker.on_document(
        DocumentResponse("http://a.test/x.json", 200, [], network_id="n1", body=b"{}")
    )
    assert tracker.settled("load")


def test_a_failed_navigation_without_a_document_is_a_failure() -> None:
    tracker = DocumentTracker(main_frame_id=FRAME)
    tracker.on_event("Page.frameRequestedNavigation", {"frameId": FRAME})
    tracker.on_event(
        "Network.loadingFailed", {"type": "Document", "errorText": "net::ERR_NAME_NOT_RESOLVED"}
    )
    assert tracker.failure == "net::ERR_NAME_NOT_RESOLVED"
    assert not tracker.settled("load")


def test_crashes_and_closed_connections_are_named() -> None:
    for method, words in [
        ("Inspector.targetCrashed", "crashed"),
        ("Target.detachedFromTarget", "detached"),
        ("CDPConnection.closed", "connection closed"),
    ]:
        tracker = DocumentTracker(main_frame_id=FRAME)
        tracker.on_event(method, {"reason": "x"})
        assert tracker.crashed is not None
        assert words in tracker.crashed
        assert tracker.changed.is_set()


def test_set_cookie_values_come_from_the_headers_or_the_extra_info_event() -> None:
    tracker = DocumentTracker(main_frame_id=FRAME)
    tracker.on_event(
        "Network.responseReceivedExtraInfo",
        {"requestId": "n1", "headers": {"Set-Cookie": "a=1\nb=2"}},
    )
    tracker.on_document(DocumentResponse("http://a.test/", 200, [], network_id="n1"))
    assert tracker.set_cookie_values() == ["a=1", "b=2"]
    tracker.on_document(
        DocumentResponse("http://a.test/", 200, [("set-cookie", "c=3")], network_id="n2")
    )
    assert tracker.set_cookie_values() == ["c=3"]
