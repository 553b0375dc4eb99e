"""One request in one fresh browser context: open a page, navigate, run the
actions, read what the browser shows. The caller's lease disposes the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy_cdp_pool.pool.lease import ContextLease
from scrapy_cdp_pool.render.actions import Action, run_action
from scrapy_cdp_pool.render.context_options import ContextOptions, playwright_cookie
from scrapy_cdp_pool.render.cookies import browser_cookies
from scrapy_cdp_pool.render.errors import (
    ActionError,
    PageCrashed,
    PageScriptError,
    ResponseTooLarge,
)
from scrapy_cdp_pool.render.page import Page
from scrapy_cdp_pool.render.redirects import is_handed_back
from scrapy_cdp_pool.render.spec import RenderSpec


@dataclass
class RenderResult:
    """What the browser saw.

    ``body`` is the rendered DOM as UTF-8 when ``rendered`` is true, else the
    main document's original bytes. ``headers`` are ``(name, value)`` pairs of
    the final main-document response, ``Set-Cookie`` values kept separate.
    ``redirects`` are the ``(url, status)`` hops before it. ``latency_s`` is
    seconds from navigation start to the final document's headers.
    """

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    rendered: bool
    redirects: list[tuple[str, int]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    blocked: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    #: Playwright ``storageState`` of the context at the end, when the spec's
    #: context options ask to save it
    storage_state: dict[str, Any] | None = None
    #: the context's cookies at the end (CDP ``Network.Cookie`` objects), when
    #: asked for (see :func:`render`)
    cookies: list[dict[str, Any]] | None = None


async def render(
    lease: ContextLease, spec: RenderSpec, *, collect_cookies: bool = False
) -> RenderResult:
    """Render ``spec`` in a fresh context on ``lease``'s connection.

    ``collect_cookies``: read the context's cookies at the end into
    :attr:`RenderResult.cookies` (not for a profile, which keeps its own).

    :raises ActionError: an action failed (names the action); not retried.
    :raises NavigationFailed, PageCrashed, ResponseTooLarge, TimeoutError,
        CDPError: see :mod:`scrapy_cdp_pool.render.errors`.
    """
    options = spec.context
    key = reuse_key(lease, spec)
    idle = lease.take_idle_page(key) if key is not None else None
    if idle is not None:
        page = await Page.reattach(
            lease.cdp, idle.context_id, idle.target_id, idle.session_id, spec,
            clear_cookies=options is None, guard_cache=True,
        )  # fmt: skip
    else:
        await lease.evict_idle_pages()
        context_id = await lease.new_context(
            options.context_params(lease.info.unsupported) if options else None,
            options.storage_cookies() if options else None,
        )
        if options is not None and options.geolocation:
            # Without the permission the page's geolocation API answers "denied".
            await lease.cdp.send(
                "Browser.grantPermissions",
                {"permissions": ["geolocation"], "browserContextId": context_id},
            )
        page = await Page.attach(
            lease.cdp,
            context_id,
            spec,
            network_events=not lease.info.set_cookie_in_fetch_headers,
            default_user_agent=lease.info.default_user_agent,
            unsupported=lease.info.unsupported,
            pipeline_navigation=lease.info.kind == "lightpanda",
            # A kept page's cache outlives this request (see FetchInterceptor).
            guard_cache=lease.info.cache_ignores_cookies or key is not None,
        )
    lease.page_opened()
    lease.keep_key, lease.target_id, lease.session_id = key, page.target_id, page.session_id
    try:
        await page.navigate(spec.navigation_timeout_s)
        results: list[Any] = []
        for index, action in enumerate(_actions_to_run(page)):
            if page.tracker.document is not None and page.tracker.document.body is not None:
                raise ActionError(
                    f"{spec.url}: action #{index} {action.describe()}: the page is not HTML"
                )
            try:
                results.append(await run_action(page, action, spec.action_timeout_s))
            except (PageScriptError, ValueError) as e:
                raise ActionError(f"{spec.url}: action #{index} {action.describe()}: {e}") from e
            except TimeoutError as e:
                raise TimeoutError(
                    f"{spec.url}: action #{index} {action.describe()} timed out"
                ) from e
        tracker = page.tracker
        document = tracker.document
        if document is None:  # navigate() returns with a document or raises
            raise PageCrashed(f"{spec.url}: no document")
        if document.body is not None:
            body, rendered = document.body, False
        else:
            html = await page.read_html(spec.action_timeout_s)
            body, rendered = html.encode("utf-8"), True
            if spec.maxsize and len(body) > spec.maxsize:
                raise ResponseTooLarge(spec.url, len(body), spec.maxsize, expected=False)
        storage_state = None
        if options is not None and options.save_state:
            storage_state = await _storage_state(lease, page, options, spec.action_timeout_s)
        cookies = None
        if collect_cookies and options is None:
            cookies = await browser_cookies(page, spec.action_timeout_s)
        lease.finished_cleanly = True
        headers = [(k, v) for k, v in document.headers if k.lower() != "set-cookie"]
        headers.extend(("Set-Cookie", value) for value in tracker.set_cookie_values())
        return RenderResult(
            url=document.url,
            status=document.status,
            headers=headers,
            body=body,
            rendered=rendered,
            redirects=list(tracker.redirects),
            results=results,
            blocked=dict(tracker.blocked),
            latency_s=document.received_at - page.started_at,
            storage_state=storage_state,
            cookies=cookies,
        )
    finally:
        page.detach()


def _actions_to_run(page: Page) -> tuple[Action, ...]:
    """The spec's actions, or none for a redirect handed back to Scrapy (they
    run on the page it leads to)."""
    document = page.tracker.document
    if document is not None and is_handed_back(document.status, document.headers):
        return ()
    return page.spec.actions


def reuse_key(lease: ContextLease, spec: RenderSpec) -> str | None:
    """The identity key under which this request's page may be reused, or
    ``None`` for a fresh context (``CDP_POOL_REUSE_PAGES``; by default on
    Chromium, where a fresh context and page cost ~0.6 s of CPU, and not on
    Lightpanda, where they cost ~20 ms). A profile whose state is saved back
    always gets a fresh context: saving closes its page; a page is reused
    only with the state it was made with (:attr:`ContextOptions.state_digest`)."""
    reuse = lease.config.reuse_pages
    if reuse is None:
        reuse = lease.info.kind != "lightpanda"
    if not reuse:
        return None
    options = spec.context
    if options is None:
        return ""
    return None if options.save_state else f"{options.name}#{options.state_digest}"


async def _storage_state(
    lease: ContextLease, page: Page, options: ContextOptions, timeout_s: float
) -> dict[str, Any]:
    """The context's cookies and the page origin's localStorage, merged into the
    profile's other origins, as a Playwright ``storageState``. The page is
    closed first: Lightpanda exports a context's storage only then."""
    origin: str = ""
    items: list[dict[str, str]] = []
    if page.tracker.document is not None and page.tracker.document.body is None:
        origin, items = await page.read_local_storage(timeout_s)
    await lease.cdp.send("Target.closeTarget", {"targetId": page.target_id}, timeout_s=timeout_s)
    result = await lease.cdp.send(
        "Storage.getCookies", {"browserContextId": lease.context_id}, timeout_s=timeout_s
    )
    origins = [
        {"origin": o, "localStorage": [{"name": k, "value": v} for k, v in kv]}
        for o, kv in options.local_storage
        if o != origin
    ]
    if origin and origin != "null":
        origins.append({"origin": origin, "localStorage": items})
    return {
        "cookies": [playwright_cookie(c) for c in result.get("cookies", [])],
        "origins": origins,
    }
