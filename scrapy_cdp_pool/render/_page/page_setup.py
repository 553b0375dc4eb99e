"""Opening a page for a render: a new target attached and set up, or a kept
one taken over (``CDP_POOL_REUSE_PAGES``), with the ``Fetch.enable``
patterns a render needs. The setup's commands go out pipelined, in one write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from scrapy_cdp_pool.browser.backends import CHROMIUM, Backend
from scrapy_cdp_pool.browser.cdp import CDPConnection
from scrapy_cdp_pool.browser.pool.favicon_block import FAVICON_FETCH_PATTERN
from scrapy_cdp_pool.render._page.document_kind import cdp_resource_type
from scrapy_cdp_pool.render._page.page import Page
from scrapy_cdp_pool.render._request.spec import RenderSpec
from scrapy_cdp_pool.settings.url_patterns import fetch_url_pattern


async def open_page(
    cdp: CDPConnection,
    context_id: str,
    spec: RenderSpec,
    *,
    network_events: bool,
    default_user_agent: str = "",
    unsupported: frozenset[str] = frozenset(),
    pipeline_navigation: bool = False,
    user_agent: tuple[str, dict[str, Any]] | None = None,
    backend: Backend = CHROMIUM,
    guard_cache: bool = False,
) -> Page:
    """Create a blank target in ``context_id``, attach to it, enable the
    domains a render needs and apply the profile's options (user agent,
    locale, headers...), pipelined in one round trip.

    ``network_events``: enable the Network domain (Chromium reports
    ``Set-Cookie`` only in its events). ``user_agent``: the command that
    sets the page's user agent (render/_request/user_agent.py), sent last.
    ``guard_cache``: the page's HTTP cache serves other profiles or
    cookie jars (Lightpanda's with
    ``ServerInfo.cache_ignores_cookies``, or a page kept for reuse):
    subresources are paused at the response stage too, so that those
    that must not be shared are kept out of it.
    """
    target = await cdp.send(
        "Target.createTarget", {"url": "about:blank", "browserContextId": context_id}
    )
    target_id = target["targetId"]
    session_id = cdp.take_attached_session(target_id) if cdp.auto_attach else None
    if session_id is None:
        attached = await cdp.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        session_id = attached["sessionId"]
    page = Page(cdp, target_id, session_id, spec, backend)
    page.guard_cache = guard_cache
    context = spec.context
    fetch = fetch_params(
        spec, unsupported, guard_cache, block_favicon=backend.fetches_favicon,
        proxy_credentials_in_url=backend.proxy_credentials_in_url,
        bound_page_fetches=backend == CHROMIUM,
    )  # fmt: skip
    page.applied["Fetch.enable"] = fetch
    commands = [page.command("Page.enable"), page.command("Fetch.enable", fetch)]
    if network_events or _needs_network_domain(page):
        commands.append(page.command("Network.enable"))
    if context is not None:
        for method, params in context.page_commands(default_user_agent, unsupported):
            commands.append(page.command(method, params))
    if user_agent is not None:
        commands.append(page.command(*user_agent))
        page.applied[user_agent[0]] = user_agent[1]
    commands.extend(_request_commands(page))
    for source in spec.init_scripts:
        commands.append(page.command("Page.addScriptToEvaluateOnNewDocument", {"source": source}))
    setup = asyncio.gather(*commands)
    if context is None and pipeline_navigation:
        # Nothing profile-specific to apply first, and a server that handles
        # a connection's commands in order (Lightpanda): Page.navigate goes
        # out in the same write as the enables. Chromium handles Page.enable
        # in the renderer and Page.navigate in the browser process, so the
        # navigation could start before the page reports its events.
        page.pending_setup = setup
    else:
        await setup
    return page


def _needs_network_domain(page: Page) -> bool:
    """Whether the request itself needs the page's ``Network`` events
    (``networkidle``, a capture, responses waited for, the profile's options)."""
    spec, context = page.spec, page.spec.context
    return (
        spec.wait_until == "networkidle"
        or spec.capture is not None
        or page.responses is not None
        or (context is not None and context.needs_network_domain)
    )


def _set_cookies(page: Page) -> Coroutine[Any, Any, dict[str, Any]]:
    """``Network.setCookies`` of the request's Scrapy cookies, for its URL."""
    spec = page.spec
    cookies = [{"name": n, "value": v, "url": spec.url} for n, v in spec.cookies]
    return page.command("Network.setCookies", {"cookies": cookies})


def _request_commands(page: Page) -> list[Coroutine[Any, Any, dict[str, Any]]]:
    """The request's own setup commands after the profile's: its cookies,
    the console's ``Runtime`` events."""
    commands = []
    if page.spec.cookies:
        commands.append(_set_cookies(page))
    if page.spec.console:
        commands.append(page.command("Runtime.enable"))
    return commands


async def take_over_page(
    cdp: CDPConnection,
    context_id: str,
    target_id: str,
    session_id: str,
    spec: RenderSpec,
    *,
    clear_cookies: bool,
    user_agent: tuple[str, dict[str, Any]] | None = None,
    backend: Backend = CHROMIUM,
    guard_cache: bool = False,
    applied: dict[str, dict[str, Any]] | None = None,
) -> Page:
    """Take over a page a previous request of the same profile left open
    (``CDP_POOL_REUSE_PAGES``): its domains and profile options are still
    set; only this request's interception and user agent where they
    differ from ``applied`` (the commands in force on the page), and for
    the anonymous profile a cookie jar emptied (``clear_cookies``) and
    refilled from Scrapy's, are sent and answered before the navigation
    starts. Nothing is sent when nothing differs (the usual case: one
    round trip and an interception set-up less per page)."""
    page = Page(cdp, target_id, session_id, spec, backend)
    page.guard_cache = guard_cache
    page.applied = dict(applied or {})
    fetch = fetch_params(
        spec, guard_cache=guard_cache, block_favicon=backend.fetches_favicon,
        proxy_credentials_in_url=backend.proxy_credentials_in_url,
        bound_page_fetches=backend == CHROMIUM,
    )  # fmt: skip
    wanted = [("Fetch.enable", fetch)]
    if user_agent is not None:  # this request's, which may not be the last one's
        wanted.append(user_agent)
    commands = []
    for method, params in wanted:
        if page.applied.get(method) != params:
            page.applied.pop(method, None)  # known again once answered
            commands.append(page.command(method, params))
    if spec.wait_until == "networkidle" or spec.capture is not None or page.responses is not None:
        commands.append(page.command("Network.enable"))
    if spec.console:
        commands.append(page.command("Runtime.enable"))
    if clear_cookies:
        commands.append(cdp.post("Storage.clearCookies", {"browserContextId": context_id}))
    if spec.cookies:
        commands.append(_set_cookies(page))
    if commands:
        await asyncio.gather(*commands)
    page.applied.update(wanted)
    return page


def fetch_params(
    spec: RenderSpec,
    unsupported: frozenset[str] = frozenset(),
    guard_cache: bool = False,
    block_favicon: bool = False,
    proxy_credentials_in_url: bool = False,
    bound_page_fetches: bool = False,
) -> dict[str, Any]:
    """``Fetch.enable`` parameters: the main document at the response stage
    (every response with ``guard_cache``), its request when it must be
    rewritten, the blocked resource types, the requests ``CDP_POOL_BLOCK_URLS``
    may match (each checked again), every request when private networks are
    not allowed (``CDP_POOL_ALLOW_PRIVATE_NETWORKS``); proxy challenges answered where the
    context has the proxy (not on a dedicated server, ``"proxy"`` in
    ``unsupported``: it sends the credentials itself; nor with
    ``proxy_credentials_in_url``, Lightpanda's: the context's proxy URL
    carries them), and a server's where the request has basic credentials
    (:attr:`RenderSpec.basic_credentials`); with ``block_favicon``, the
    browser's own ``/favicon.ico`` requests (resource type ``Other``: a
    page's ``<img>`` or ``fetch()`` of it is not one), which
    :class:`~scrapy_cdp_pool.render._page.interception.FetchInterceptor` fails;
    with ``bound_page_fetches`` and a ``maxsize`` (Chromium: it reads a page's
    ``fetch()`` or XHR body whole, a 1 GiB one grew the browser to 3.2 GB),
    the responses of the page's own ``fetch()`` and XHR calls at the response
    stage, failed when their ``Content-Length`` is past ``maxsize``."""
    patterns: list[dict[str, str]] = [{"resourceType": "Document", "requestStage": "Response"}]
    if guard_cache:
        patterns.append({"requestStage": "Response"})
    context = spec.context
    proxy_auth = (
        context is not None
        and bool(context.proxy_username)
        and "proxy" not in unsupported
        and not proxy_credentials_in_url
    )
    server_auth = spec.basic_credentials is not None
    patterns.extend(_request_stage_patterns(spec, proxy_auth))
    if bound_page_fetches and spec.maxsize and not guard_cache:
        patterns.append({"resourceType": "Fetch", "requestStage": "Response"})
        patterns.append({"resourceType": "XHR", "requestStage": "Response"})
    if block_favicon:
        patterns.append(dict(FAVICON_FETCH_PATTERN))
    params: dict[str, Any] = {"patterns": patterns}
    if proxy_auth or server_auth:
        params["handleAuthRequests"] = True
    return params


def _request_stage_patterns(spec: RenderSpec, proxy_auth: bool) -> list[dict[str, str]]:
    """The ``Fetch`` patterns of :func:`fetch_params` for the request
    stage: the challenges to answer, the private-network rule, the blocked
    resource types and URL patterns."""
    patterns: list[dict[str, str]] = []
    if spec.basic_credentials is not None:
        # The page's own calls may be challenged (HTTP basic auth): Lightpanda
        # raises Fetch.authRequired only for a request paused at the request
        # stage, so every request is.
        patterns.append({"requestStage": "Request"})
    elif spec.overrides_request or proxy_auth or spec.pause_navigations:
        # Lightpanda raises Fetch.authRequired only for a request paused at
        # the request stage; otherwise the proxy's 407 is the response.
        patterns.append({"resourceType": "Document", "requestStage": "Request"})
    if not spec.allow_private_networks:
        # every request the page starts is asked about (render/_page/private_network.py)
        patterns.append({"requestStage": "Request"})
    for resource_type in sorted(spec.block_resources):
        patterns.append({"resourceType": cdp_resource_type(resource_type)})
    for url_pattern in sorted({fetch_url_pattern(p) for p in spec.block_urls}):
        patterns.append({"urlPattern": url_pattern, "requestStage": "Request"})
    return patterns
