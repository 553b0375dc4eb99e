"""Failure snapshots (``CDP_POOL_SNAPSHOT_DIR``): what a page showed when its
render failed.

For each failed render (an error, a timeout, a failed action) the page's HTML
and a PNG screenshot are written to the directory as ``<fingerprint>.html``
and ``<fingerprint>.png`` (``fingerprint``: the request's, hex, from Scrapy's
``REQUEST_FINGERPRINTER``), and a JSON line is appended to ``errors.jsonl``::

    {"fingerprint": str, "url": str, "error": "<Type>: <message>", "time": epoch s,
     "files": [names written], "skipped": {name: reason}}

Both backends answer ``Page.captureScreenshot`` (PNG). What the page cannot
give (it crashed, the connection went away, it did not answer within
:data:`SNAPSHOT_TIMEOUT_S`) is named in ``skipped``; a snapshot never changes
the render's error. Caps: at most ``CDP_POOL_SNAPSHOT_MAX_COUNT`` snapshots per
crawl, and ``CDP_POOL_SNAPSHOT_MAX_MB`` per snapshot (a file that would pass it
is skipped, named). The directory is created 0700 and the files 0600: pages
may show personal data.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.cdp import CDPError
from scrapy_cdp_pool.errors import PageScriptError
from scrapy_cdp_pool.messages import cap_message

if TYPE_CHECKING:
    from scrapy_cdp_pool.render._page.page import Page

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.snapshots")

#: seconds the page has to give its HTML, and its screenshot
SNAPSHOT_TIMEOUT_S = 5.0
ERRORS_FILE = "errors.jsonl"
_READ_HTML = (
    "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '')"
    " + (document.documentElement ? document.documentElement.outerHTML : '')"
)


class SnapshotWriter:
    """Writes failure snapshots to ``directory`` (which must exist), at most
    ``max_count`` of them, each at most ``max_bytes`` bytes."""

    def __init__(self, directory: str, max_count: int, max_bytes: int) -> None:
        self.directory = Path(directory)
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.written = 0
        self.skipped = 0

    async def take(self, page: Page, fingerprint: str, error: BaseException) -> bool:
        """Snapshot ``page`` after ``error``; ``False`` when the count cap was
        reached (nothing written). Never raises for what the page or the disk
        cannot do: that is logged, and named in the JSON line."""
        if self.written >= self.max_count:
            self.skipped += 1
            return False
        self.written += 1
        files: list[str] = []
        skipped: dict[str, str] = {}
        budget = self.max_bytes
        try:
            # Chromium answers no script while a navigation is pending (a
            # timeout's usual cause): stop it; the render has failed anyway.
            await page.command("Page.stopLoading", None, SNAPSHOT_TIMEOUT_S)
        except (CDPError, TimeoutError) as e:
            logger.debug("%s: Page.stopLoading before a snapshot: %r", page.spec.url, e)
        html = await _ask(page, "html", skipped)
        if html is not None:
            data = html.encode("utf-8")
            budget = self._write(f"{fingerprint}.html", data, budget, files, skipped)
        png = await _ask(page, "png", skipped)
        if png is not None:
            self._write(f"{fingerprint}.png", png, budget, files, skipped)
        line = {
            "fingerprint": fingerprint,
            "url": page.spec.url,
            "error": cap_message(_describe(error)),
            "time": round(time.time(), 3),
            "files": files,
            "skipped": skipped,
        }
        if page.console is not None:  # meta["cdp_console"]: the page's own errors
            line["console"] = page.console.messages()
        try:
            fd = os.open(
                self.directory / ERRORS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
            )
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        except OSError as e:
            logger.warning("Could not write a failure snapshot line in %s: %s", self.directory, e)
        return True

    def _write(
        self, name: str, data: bytes, budget: int, files: list[str], skipped: dict[str, str]
    ) -> int:
        if len(data) > budget:
            skipped[name] = (
                f"{len(data)} bytes, over CDP_POOL_SNAPSHOT_MAX_MB ({budget} bytes left)"
            )
            return budget
        try:
            fd = os.open(self.directory / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as e:
            skipped[name] = f"cannot be written ({e.strerror or e})"
            logger.warning("Could not write the failure snapshot %s: %s", name, e)
            return budget
        files.append(name)
        return budget - len(data)


async def _ask(page: Page, what: str, skipped: dict[str, str]) -> Any:
    """The page's HTML (``str``) or PNG screenshot (``bytes``), or ``None`` with
    the reason in ``skipped``."""
    try:
        async with asyncio.timeout(SNAPSHOT_TIMEOUT_S):
            if what == "html":
                return str(await page.evaluate(_READ_HTML, SNAPSHOT_TIMEOUT_S) or "")
            result = await page.command(
                "Page.captureScreenshot", {"format": "png"}, SNAPSHOT_TIMEOUT_S
            )
            return base64.b64decode(result.get("data", ""))
    except (CDPError, PageScriptError, TimeoutError, ValueError) as e:
        # the page may be gone: say so, keep the render's error
        reason = str(e) or f"no answer within {SNAPSHOT_TIMEOUT_S:g} s"
        skipped[what] = cap_message(f"{type(e).__name__}: {reason}", 500)
        return None


def _describe(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "CancelledError: the render was cut short (download_timeout, or the crawl stopping)"
    text = str(error) or ("timed out" if isinstance(error, TimeoutError) else "(no message)")
    return f"{type(error).__name__}: {text}"
