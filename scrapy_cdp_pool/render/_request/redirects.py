"""Redirects of rendered requests, as Scrapy's ``RedirectMiddleware`` gives them.

A rendered request without a profile does not let the browser follow the
redirects of its own navigation: the first ``301/302/303/307/308`` with a
``Location`` is stopped at Fetch's response stage and returned to Scrapy as the
response. Scrapy's downloader middlewares then do for it what they do for a
plain request: ``CookiesMiddleware`` stores the hop's ``Set-Cookie``,
``RedirectMiddleware`` builds the next request (``redirect_times``,
``redirect_ttl``, ``redirect_urls``, ``redirect_reasons``, ``REDIRECT_MAX_TIMES``
and "max redirections reached", ``dont_redirect``, ``handle_httpstatus_list``,
``REDIRECT_ENABLED``, 307/308 keeping method, body and headers, 301/302/303
switching a POST to GET, ``Cookie``/``Authorization`` dropped across hosts),
which is rendered in turn with the same meta (actions run on the final page).

A request with a profile keeps its cookies in the browser context: the browser
follows its redirects, and so it does for navigations an action starts. Those
hops are appended to the same meta keys (:func:`record_browser_hops`); Scrapy's
redirect settings do not apply to them.
"""

from __future__ import annotations

from typing import Any

from scrapy_cdp_pool.render._request.spec import RenderSpec

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def hands_back_redirects(spec: RenderSpec) -> bool:
    """Whether the redirects of ``spec``'s navigation go back to Scrapy: yes
    unless the request has a profile (``spec.context`` with a name; a request
    without one may still carry context options, e.g. its ``meta["proxy"]``)."""
    return spec.context is None or not spec.context.name


def is_handed_back(status: int, headers: list[tuple[str, str]]) -> bool:
    """Whether a document with ``status`` and ``headers`` is a redirect that
    Scrapy follows (no actions run on it)."""
    return status in REDIRECT_STATUSES and any(k.lower() == "location" for k, _ in headers)


def record_browser_hops(meta: dict[str, Any], hops: list[tuple[str, int | str]]) -> None:
    """Append redirects the browser followed (``(url, reason)`` pairs: a
    status, or a client-side navigation's reason such as ``"meta refresh"``)
    to the meta keys Scrapy's ``RedirectMiddleware`` and
    ``MetaRefreshMiddleware`` write, after any they wrote."""
    if not hops:
        return
    meta["redirect_urls"] = [*meta.get("redirect_urls", []), *(url for url, _ in hops)]
    meta["redirect_reasons"] = [*meta.get("redirect_reasons", []), *(code for _, code in hops)]
    meta["redirect_times"] = meta.get("redirect_times", 0) + len(hops)
