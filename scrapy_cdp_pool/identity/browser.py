"""Playwright pages for code you write yourself (sign-in hooks, ``profile
create``), on the same CDP servers the pool uses.

Playwright connects over CDP (``chromium.connect_over_cdp``) to a running
server, opens one context with a profile's storage state and identity, gives
the page to the caller, and reads the context's storage state at the end.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.render.errors import PoolUnavailable

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

    from scrapy_cdp_pool.pool.pool import ConnectionPool
    from scrapy_cdp_pool.pool.server_options import ServerOptions


@asynccontextmanager
async def playwright_page(
    endpoint: str, context_args: dict[str, Any], timeout_s: float
) -> AsyncIterator[tuple[BrowserContext, Page]]:
    """A new context (``Browser.new_context(**context_args)``) and page on
    the CDP server at ``endpoint``; both closed at the end, the server left
    running. ``timeout_s`` is Playwright's default timeout for each step."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(endpoint, timeout=timeout_s * 1000)
        try:
            context = await browser.new_context(**context_args)
            context.set_default_timeout(timeout_s * 1000)
            try:
                page = await context.new_page()
                yield context, page
            finally:
                await context.close()
        finally:
            await browser.close()


async def run_hook(hook: Callable[..., Any], *args: Any) -> None:
    """Call ``hook(*args)`` and await what it returns when it is awaitable."""
    result = hook(*args)
    if inspect.isawaitable(result):
        await result


@asynccontextmanager
async def endpoint_for(
    pool: ConnectionPool, requires: frozenset[str], server_options: ServerOptions | None
) -> AsyncIterator[str]:
    """An endpoint of ``pool`` that honours ``requires`` (the first that does,
    or a dedicated server, kept running until the block ends), for code that
    opens its own connection (a Playwright sign-in hook).

    :raises PoolUnavailable: none does (``CapabilityUnavailable``), or the
        pool could not start.
    """
    await pool.start()
    left = pool.dedicated_requires(requires, server_options)
    if left is not None and server_options is not None and pool.dedicated is not None:
        async with pool.dedicated.endpoint(server_options) as endpoint:
            yield endpoint
        return
    pool.check_capabilities(requires)
    for endpoint, info in zip(pool.endpoints, pool.infos, strict=False):
        if info is not None and not requires & info.unsupported:
            yield endpoint
            return
    raise PoolUnavailable("the CDP pool has no endpoint that answers")
