"""Which page a render runs in: the page a previous request of the same
profile kept (``CDP_POOL_REUSE_PAGES``) taken over, or a new one in a new
browser context of the lease (kept pages evicted to make room first)."""

from __future__ import annotations

from typing import Any

from scrapy_cdp_pool.browser.pool.connection import IdlePage
from scrapy_cdp_pool.browser.pool.lease import ContextLease
from scrapy_cdp_pool.render._page.page import Page
from scrapy_cdp_pool.render._page.page_setup import open_page, take_over_page
from scrapy_cdp_pool.render._request.spec import RenderSpec


async def page_for(
    lease: ContextLease, spec: RenderSpec, user_agent: tuple[str, dict[str, Any]] | None
) -> tuple[Page, str | None]:
    """The page to render ``spec`` in on ``lease``, and the key it may be
    kept under for the next request (:func:`reuse_key`; ``None``: disposed
    at the end). ``user_agent``: the command that sets its user agent
    (render/_request/user_agent.py)."""
    key = reuse_key(lease, spec)
    idle = lease.take_idle_page(key) if key is not None else None
    if idle is not None:
        return await _take_over(lease, spec, idle, user_agent), key
    return await _open_new(lease, spec, user_agent, kept=key is not None), key


async def _take_over(
    lease: ContextLease,
    spec: RenderSpec,
    idle: IdlePage,
    user_agent: tuple[str, dict[str, Any]] | None,
) -> Page:
    """The page ``idle`` kept for this request's profile, taken over."""
    options = spec.context
    return await take_over_page(
        lease.cdp,
        idle.context_id,
        idle.target_id,
        idle.session_id,
        spec,
        # cleaned when it was kept: no cookie unless a profile's were set again
        clear_cookies=(options is None or not options.name) and not idle.no_cookies,
        user_agent=user_agent,
        backend=lease.info.backend,
        guard_cache=True,
        applied=idle.applied,
    )


async def _open_new(
    lease: ContextLease, spec: RenderSpec, user_agent: tuple[str, dict[str, Any]] | None, kept: bool
) -> Page:
    """A page in a new context of ``lease`` (kept pages evicted to make
    room first); ``kept``: it may be kept for the next request."""
    options = spec.context
    await lease.evict_idle_pages()
    context_id = await lease.new_context(
        options.context_params(
            lease.info.unsupported,
            credentials_in_url=lease.info.backend.proxy_credentials_in_url,
        )
        if options
        else None,
        options.storage_cookies() if options else None,
    )
    if options is not None and options.geolocation:
        # Without the permission the page's geolocation API answers "denied".
        await lease.cdp.send(
            "Browser.grantPermissions",
            {"permissions": ["geolocation"], "browserContextId": context_id},
        )
    return await open_page(
        lease.cdp,
        context_id,
        spec,
        network_events=not lease.info.set_cookie_in_fetch_headers,
        default_user_agent=lease.info.default_user_agent,
        unsupported=lease.info.unsupported,
        pipeline_navigation=lease.info.backend.pipeline_navigation,
        user_agent=user_agent,
        backend=lease.info.backend,
        # A kept page's cache outlives this request (see FetchInterceptor).
        guard_cache=lease.info.cache_ignores_cookies or kept,
    )


def reuse_key(lease: ContextLease, spec: RenderSpec) -> str | None:
    """The key under which this request's page may be reused
    (:meth:`ContextLease.reuse_key <scrapy_cdp_pool.browser.pool.lease.ContextLease.reuse_key>`).
    A profile whose state is saved back always gets a fresh context: saving
    closes its page; a page is reused only with the state it was made with
    (:attr:`ContextOptions.state_digest`); a page with init scripts is never
    reused, nor given to one that has them; nor is a live page, the
    callback's (``meta["cdp_include_page"]``)."""
    options = spec.context
    if spec.init_scripts or spec.include_page or (options is not None and options.save_state):
        return lease.reuse_key(None)
    if options is None:
        return lease.reuse_key("")
    return lease.reuse_key(f"{options.name}#{options.state_digest}{options.proxy_key}")
