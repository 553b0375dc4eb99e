"""Downloads a page starts (``location.href`` or a click to an attachment, a
frame loading one): they never replace the page's response, as a browser
keeps the page and Playwright's ``page`` stays on it.

A document response other than the request's own, paused at the response
stage, is a download when a browser would not display it: a
``Content-Disposition: attachment``, or a type other than text, images,
audio, video, JSON, XML and JavaScript (``application/octet-stream``, a ZIP,
a PDF: headless Chromium has no PDF viewer). It is stopped there
(``Fetch.failRequest``), before its body is read, unless the request asked
for downloads (``meta["cdp_downloads"]``): then at most
``CDP_POOL_PAGE_DOWNLOAD_MAX_MB`` of it is read and the transfer is cut
(a larger ``Content-Length`` is not read at all). Each one is recorded in
``response.meta["cdp_downloads"]`` when asked for, and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

_DISPLAYED_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/xhtml+xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
    }
)
_DISPLAYED_PREFIXES = ("text/", "image/", "audio/", "video/")
_FILENAME_STAR = re.compile(r"filename\*\s*=\s*([^;]+)", re.IGNORECASE)
_FILENAME = re.compile(r'filename\s*=\s*("(?:[^"\\]|\\.)*"|[^;]+)', re.IGNORECASE)


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in headers if k.lower() == name), "")


def is_download(status: int, headers: list[tuple[str, str]]) -> bool:
    """Whether a document response is one a browser downloads instead of
    showing: an attachment, or a type it does not display. A response
    without a ``Content-Type``, a redirect or one without a body is not."""
    if not 200 <= status < 300 or status in (204, 205):
        return False
    if _header(headers, "content-disposition").strip().lower().startswith("attachment"):
        return True
    content_type = _header(headers, "content-type").split(";")[0].strip().lower()
    if not content_type or content_type in _DISPLAYED_TYPES:
        return False
    if content_type.startswith(_DISPLAYED_PREFIXES):
        return False
    return not content_type.endswith(("+xml", "+json"))


def download_name(url: str, headers: list[tuple[str, str]]) -> str:
    """The file name a browser would save it under: the
    ``Content-Disposition`` ``filename*`` or ``filename``, else the URL's
    last path segment (``download`` when it has none); never a path."""
    disposition = _header(headers, "content-disposition")
    name = ""
    star = _FILENAME_STAR.search(disposition)
    if star:
        value = star.group(1).strip()
        _, _, encoded = value.partition("''")
        name = unquote(encoded or value)
    else:
        plain = _FILENAME.search(disposition)
        if plain:
            name = plain.group(1).strip().strip('"')
    if not name:
        name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    return name or "download"


@dataclass
class PageDownload:
    """One download a page started."""

    url: str
    name: str
    type: str
    #: the size the server announced (``Content-Length``), or the bytes read
    #: when the whole body was read; ``None``: not known
    size: int | None
    #: the bytes kept (``None``: not asked for, or larger than the bound and
    #: announced so)
    body: bytes | None
    #: the body was larger than the bound: ``body`` is its first bytes, or
    #: ``None`` when a ``Content-Length`` said so before any was read
    truncated: bool

    def as_meta(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "name": self.name,
            "type": self.type,
            "size": self.size,
            "body": self.body,
            "truncated": self.truncated,
        }
