"""Downloads a page starts, paused at their response (for
:class:`~scrapy_cdp_pool.render._page.interception.FetchInterceptor`): told
apart from the page's own document, recorded with at most
``download_max_bytes`` of their body when the request asked for downloads,
and stopped, so that the page stays (see
:mod:`~scrapy_cdp_pool.render._page.downloads`)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.render._page.body_stream import read_body_prefix
from scrapy_cdp_pool.render._page.document_kind import content_length
from scrapy_cdp_pool.render._page.document_response import abort
from scrapy_cdp_pool.render._page.downloads import PageDownload, download_name, is_download

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page_handle import PageHandle


def is_page_download(page: PageHandle, params: dict[str, Any]) -> bool:
    """Whether a document response paused at the response stage is a
    download the page started (render/_page/downloads.py): any frame's, but
    never the request's own document (the main frame's first)."""
    if str(params.get("resourceType", "")).lower() != "document":
        return False
    if "responseErrorReason" in params or "responseStatusCode" not in params:
        return False
    main_frame = params.get("frameId") == page.target_id
    if main_frame and page.tracker.document is None:
        return False
    if main_frame and not params.get("networkId"):
        # Chromium's ``<a download>``: a main-frame document fetched by its
        # download manager, not by a navigation (no loader, so no
        # networkId): a download whatever its type (before, a text/csv
        # without Content-Disposition replaced the page).
        return True
    headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
    return is_download(int(params["responseStatusCode"]), headers)


async def take_download(page: PageHandle, params: dict[str, Any]) -> None:
    """Record a download the page started, with at most
    ``spec.download_max_bytes`` of its body when the request asked for
    downloads, and stop it: the page stays."""
    request_id = params["requestId"]
    headers = [(h["name"], h["value"]) for h in params.get("responseHeaders", [])]
    url = str(params.get("request", {}).get("url", ""))
    length = content_length(headers)
    content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
    record = PageDownload(
        url=url,
        name=download_name(url, headers),
        type=content_type.split(";")[0].strip().lower(),
        size=length,
        body=None,
        truncated=False,
    )
    spec = page.spec
    try:
        if spec.downloads:
            bound = spec.download_max_bytes
            if length is not None and length > bound:
                record.truncated = True
            elif page.backend.streams_response_bodies:
                record.body, complete = await read_body_prefix(page, request_id, bound)
                record.truncated = not complete
                if complete:
                    record.size = len(record.body)
            elif length is not None:
                result = await page.command("Fetch.getResponseBody", {"requestId": request_id})
                data = result.get("body", "")
                body = base64.b64decode(data) if result.get("base64Encoded") else data.encode()
                record.body = body[:bound]
                record.truncated = len(body) > bound
            else:  # no size announced, and no reading in parts: not read
                record.truncated = True
    finally:
        if not page.backend.pauses_before_body:
            page.tracker.downloads_fetched_whole += 1
        page.tracker.on_download(record)
        await abort(page, request_id)
