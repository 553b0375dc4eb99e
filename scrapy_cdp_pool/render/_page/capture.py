"""Network capture: the responses a page receives during its render, as plain data.

``meta["cdp_capture"]`` says which ones (see
:func:`~scrapy_cdp_pool.render._page.capture_rule.parse_capture`); each
matching response comes back in ``response.meta["cdp_network"]`` as a dict::

    {"url": str, "method": str, "resource_type": str (lower case, "xhr", "fetch",
     "document", "script"...), "status": int | None, "headers": {name: value},
     "request_headers": {name: value}, "post_data": bytes | None,
     "body": bytes | None, "body_skipped": str | None, "error": str | None,
     "timing": {"request": s, "response": s | None, "finished": s | None}}

Times are seconds since the page was opened, just before its navigation
started (the same origin as ``download_latency``). ``status`` is ``None`` when
no response came (``error`` says why, or the render ended first). ``body`` is
``None`` when it was not kept, and ``body_skipped`` then says why: larger than
``CDP_POOL_CAPTURE_MAX_BODY_MB``, over the request's total
``CDP_POOL_CAPTURE_MAX_TOTAL_MB``, not finished when the render ended, or the
browser no longer had it. A body is never dropped without that flag.

It is cheap for the rest of the page: the ``Network`` domain's events are
read as they come, and a body is asked for (``Network.getResponseBody``, after
``Network.loadingFinished``) only for a response that matches. Both backends
report ``Network.requestWillBeSent`` / ``responseReceived`` / ``loadingFinished``
/ ``loadingFailed`` and answer ``Network.getResponseBody``.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.cdp import CDPError
from scrapy_cdp_pool.render._page.capture_rule import CaptureRule

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page_handle import PageHandle

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.capture")


class NetworkCapture:
    """Collects the matching responses of one page from its ``Network`` events.

    Feed it every event of the page's session (:meth:`on_event`); call
    :meth:`collect` once at the end of the render.
    """

    def __init__(self, page: PageHandle, rule: CaptureRule) -> None:
        self.page = page
        self.rule = rule
        self.entries: list[dict[str, Any]] = []
        self._live: dict[str, dict[str, Any]] = {}  # requestId -> its current entry
        self._tasks: set[asyncio.Task[None]] = set()
        self._kept_bytes = 0

    def _now(self) -> float:
        return round(time.monotonic() - self.page.started_at, 6)

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Network.requestWillBeSent":
            self._on_request(params)
            return
        entry = self._live.get(str(params.get("requestId", "")))
        if entry is None:
            return
        if method == "Network.responseReceived":
            response = params.get("response") or {}
            entry["status"] = int(response.get("status") or 0) or None
            entry["headers"] = dict(response.get("headers") or {})
            entry["timing"]["response"] = self._now()
            if params.get("type"):
                entry["resource_type"] = str(params["type"]).lower()
        elif method == "Network.loadingFinished":
            entry["timing"]["finished"] = self._now()
            del self._live[str(params["requestId"])]
            task = asyncio.get_running_loop().create_task(
                self._read_body(str(params["requestId"]), entry)
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif method == "Network.loadingFailed":
            entry["error"] = str(params.get("errorText") or "failed")
            entry["timing"]["finished"] = self._now()
            del self._live[str(params["requestId"])]

    def _on_request(self, params: dict[str, Any]) -> None:
        request_id = str(params.get("requestId", ""))
        previous = self._live.pop(request_id, None)
        redirect = params.get("redirectResponse")
        if previous is not None and redirect:
            # The same request id goes on after a redirect: that hop ends here.
            previous["status"] = int(redirect.get("status") or 0) or None
            previous["headers"] = dict(redirect.get("headers") or {})
            previous["timing"]["response"] = previous["timing"]["finished"] = self._now()
        request = params.get("request") or {}
        url = str(request.get("url", ""))
        resource_type = str(params.get("type") or "other").lower()
        if not self.rule.matches(url, resource_type):
            return
        entry: dict[str, Any] = {
            "url": url,
            "method": str(request.get("method", "GET")),
            "resource_type": resource_type,
            "status": None,
            "headers": {},
            "request_headers": dict(request.get("headers") or {}),
            "post_data": _post_data(request),
            "body": None,
            "body_skipped": None,
            "error": None,
            "timing": {"request": self._now(), "response": None, "finished": None},
        }
        self.entries.append(entry)
        self._live[request_id] = entry

    async def _read_body(self, request_id: str, entry: dict[str, Any]) -> None:
        rule = self.rule
        declared = _content_length(entry["headers"])
        if declared is not None and declared > rule.max_body:
            entry["body_skipped"] = _too_large(declared, rule.max_body)
            return
        try:
            result = await self.page.command(
                "Network.getResponseBody",
                {"requestId": request_id},
                self.page.spec.action_timeout_s,
            )
        except (CDPError, TimeoutError) as e:
            entry["body_skipped"] = f"the browser did not give it: {e}"
            return
        data = result.get("body", "")
        body = base64.b64decode(data) if result.get("base64Encoded") else data.encode("utf-8")
        if len(body) > rule.max_body:
            entry["body_skipped"] = _too_large(len(body), rule.max_body)
        elif self._kept_bytes + len(body) > rule.max_total:
            entry["body_skipped"] = (
                f"over CDP_POOL_CAPTURE_MAX_TOTAL_MB ({rule.max_total} bytes) for this "
                f"request: {self._kept_bytes} bytes kept before this {len(body)}-byte body"
            )
        else:
            self._kept_bytes += len(body)
            entry["body"] = body

    async def collect(self, timeout_s: float) -> list[dict[str, Any]]:
        """Wait (at most ``timeout_s`` seconds) for the bodies being read, flag
        those of responses still loading, and return the entries in request
        order."""
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout_s)
            for task in pending:
                task.cancel()
        for entry in self.entries:
            if entry["body"] is None and entry["body_skipped"] is None and entry["error"] is None:
                entry["body_skipped"] = "not finished when the render ended"
        return self.entries

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()


def _post_data(request: dict[str, Any]) -> bytes | None:
    """The request body: Chromium's ``postDataEntries`` (base64, byte-exact)
    when given, else ``postData`` as UTF-8."""
    entries = request.get("postDataEntries")
    if entries:
        return b"".join(base64.b64decode(e.get("bytes", "")) for e in entries)
    data = request.get("postData")
    if data is None:
        return None
    return str(data).encode("utf-8")


def _content_length(headers: dict[str, Any]) -> int | None:
    for name, value in headers.items():
        if name.lower() == "content-length" and str(value).strip().isdigit():
            return int(value)
    return None


def _too_large(size: int, limit: int) -> str:
    return f"larger than CDP_POOL_CAPTURE_MAX_BODY_MB: {size} bytes > {limit}"
