"""Playwright pages for code you write yourself (sign-in hooks, ``profile
create``), on the same CDP servers the pool uses.

Playwright opens one context with a profile's storage state and profile,
gives the page to the caller, and reads the context's storage state at the
end. It reaches the browser by a channel only the crawl's user can use:

- a remote endpoint (``CDP_POOL_ENDPOINTS``): ``chromium.connect_over_cdp``
  to it, as given;
- the embedded Lightpanda (a Unix socket): ``connect_over_cdp`` through a
  one-use relay on 127.0.0.1 at a random path
  (:func:`~scrapy_cdp_pool.profiles.relay.unix_socket_relay`);
- the embedded Chromium (a pipe nothing else can join): a short-lived
  Chromium of the hook's own, ``chromium.launch`` with
  ``CDP_POOL_CHROMIUM_PATH`` and the pool's flags (Playwright talks to it
  over a pipe too).
"""

from __future__ import annotations

import contextlib
import inspect
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.browser.backends import CHROMIUM
from scrapy_cdp_pool.browser.cdp.transport import UNIX_SCHEME
from scrapy_cdp_pool.browser.pool.embedded_server import private_env
from scrapy_cdp_pool.browser.pool.private_dir import make_private_dir
from scrapy_cdp_pool.browser.pool.server_flags import CHROMIUM_FLAGS
from scrapy_cdp_pool.errors import PoolUnavailable
from scrapy_cdp_pool.profiles.relay import unix_socket_relay
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
    from scrapy_cdp_pool.browser.pool.server_options import ServerOptions


#: Playwright's own pipe replaces these; it chooses headless itself
_NOT_FOR_LAUNCH = ("--headless", "--remote-debugging-")


@asynccontextmanager
async def playwright_page(
    endpoint: str,
    context_args: dict[str, Any],
    timeout_s: float,
    config: PoolConfig | None = None,
) -> AsyncIterator[tuple[BrowserContext, Page]]:
    """A new context (``Browser.new_context(**context_args)``) and page on
    the CDP server at ``endpoint`` (a URL, the embedded Lightpanda's
    ``ws+unix://`` socket, or the embedded Chromium's ``pipe:`` name: then a
    Chromium of its own is launched, with ``config``'s path and flags); both
    closed at the end, the server left running. ``timeout_s`` is
    Playwright's default timeout for each step."""
    from playwright.async_api import async_playwright

    async with contextlib.AsyncExitStack() as stack:
        playwright = await stack.enter_async_context(async_playwright())
        if endpoint.startswith("pipe:"):
            config = config or PoolConfig(browser=CHROMIUM.kind)
            private = make_private_dir("hook")
            stack.callback(shutil.rmtree, private, True)
            args = [
                a
                for a in (*CHROMIUM_FLAGS, *config.chromium_args)
                if not a.startswith(_NOT_FOR_LAUNCH)
            ]
            browser = await playwright.chromium.launch(
                executable_path=config.chromium_path,
                args=[*args, f"--crash-dumps-dir={private / 'crashes'}"],
                env={**private_env(private)},
                timeout=timeout_s * 1000,
            )
        else:
            if endpoint.startswith(UNIX_SCHEME):
                endpoint = await stack.enter_async_context(unix_socket_relay(endpoint))
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


def on_dedicated_server(
    pool: ConnectionPool, requires: frozenset[str], server_options: ServerOptions | None
) -> bool:
    """Whether a Playwright context for these options goes to a dedicated
    server started with ``server_options`` (:func:`endpoint_for`): what the
    endpoints miss is covered there, or (``server_options`` has a proxy) the
    endpoints are Lightpanda's, which takes a proxy's credentials only in its
    URL, which Playwright leaves out (see ``ContextOptions.server_options``)."""
    if server_options is None or pool.dedicated is None:
        return False
    if pool.dedicated_requires(requires, server_options) is not None:
        return True
    known = [info for info in pool.infos if info is not None]
    return (
        server_options.proxy_server is not None
        and bool(known)
        and all(info.backend.proxy_credentials_in_url for info in known)
    )


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
    if (
        server_options is not None
        and pool.dedicated is not None
        and on_dedicated_server(pool, requires, server_options)
    ):
        async with pool.dedicated.endpoint(server_options) as endpoint:
            yield endpoint
        return
    pool.check_capabilities(requires)
    for endpoint, info in zip(pool.endpoints, pool.infos, strict=False):
        if info is not None and not requires & info.unsupported:
            yield endpoint
            return
    raise PoolUnavailable("the CDP pool has no endpoint that answers")
