"""The live page's Playwright ``BrowserContext``, made to answer as the
request's context: two of its methods are replaced on that one object
(:func:`adapt_context`).

- ``storage_state(path=None, ...)``: Playwright's, plus the localStorage of
  the page's own origin, and of the other origins the profile's storage
  state lists (as Playwright's own context made from that state gives them).
  Playwright collects localStorage only for origins it saw a page navigate to,
  and it attached to the live page after its load, so without this the
  page's origin was missing (``"origins": []``). The shape
  is Playwright's: ``{"cookies": [...], "origins": [{"origin",
  "localStorage": [{"name", "value"}]}]}``; ``path`` writes it as JSON as
  Playwright does.
- ``close(reason=None)``: closes the page, as ``page.close()`` does (the
  context is the request's, disposed by the plugin once the page is closed);
  once the page is closed it does nothing. Playwright's own raised
  ``TargetClosedError`` after ``page.close()`` (the relay is gone then), so
  scrapy-playwright's ``await page.close(); await page.context.close()``
  failed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.render._request.storage_state import LOCAL_STORAGE_SCRIPT, local_storage_of

if TYPE_CHECKING:
    from playwright.async_api import Page


def adapt_context(
    page: Page,
    page_closed: Callable[[], bool],
    stored: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (),
) -> None:
    """Replace ``storage_state`` and ``close`` of ``page.context`` (see the
    module); ``page_closed()`` tells whether the plugin's live page is
    closed; ``stored``: the profile's localStorage, ``((origin, ((name,
    value), ...)), ...)``."""
    context = page.context
    playwright_storage_state = context.storage_state

    async def storage_state(*, path: str | Path | None = None, **options: Any) -> Any:
        state: Any = await playwright_storage_state(**options)
        origins = state.setdefault("origins", [])
        if not page_closed():
            origin, items = local_storage_of(await page.evaluate(LOCAL_STORAGE_SCRIPT))
            known = {o.get("origin") for o in origins}
            if items and origin and origin != "null" and origin not in known:
                origins.append({"origin": origin, "localStorage": items})
                known.add(origin)
        for origin, pairs in stored:  # what the page did not change: as it was given
            if pairs and origin not in {o.get("origin") for o in origins}:
                origins.append(
                    {"origin": origin, "localStorage": [{"name": k, "value": v} for k, v in pairs]}
                )
        if path is not None:
            text = json.dumps(state, indent=2, ensure_ascii=False)
            await asyncio.to_thread(_write, Path(path), text)
        return state

    async def close(*, reason: str | None = None) -> None:
        if not page_closed():
            await page.close(reason=reason)

    context.storage_state = storage_state  # type: ignore[method-assign]
    context.close = close  # type: ignore[method-assign]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
