"""Rendering one request in one browser context, and turning what the browser
saw into a Scrapy response.

This module is the render layer's one front door: the core and the features
import what they use from ``scrapy_cdp_pool.render`` and nothing below it (an
import-linter ``private_modules`` contract in pyproject.toml checks it). Its
internals are private subpackages: ``_request`` (the run of one request: its
spec, the render, the response, cookies, storage state), ``_page`` (one page and
what its CDP events say), ``_actions`` (page actions, parsed and run) and
``_live`` (the live page handed to a callback)."""

from scrapy_cdp_pool.render._actions.action import Action
from scrapy_cdp_pool.render._actions.actions import parse_actions
from scrapy_cdp_pool.render._live.live_page import LIVE_PAGE_META_KEY, LivePages
from scrapy_cdp_pool.render._page.capture_rule import CaptureRule, parse_capture
from scrapy_cdp_pool.render._page.console import CONSOLE_MESSAGES_META_KEY, parse_console
from scrapy_cdp_pool.render._page.dialogs import RefusedAcceptWarning
from scrapy_cdp_pool.render._page.document import DocumentResponse
from scrapy_cdp_pool.render._page.document_kind import content_length
from scrapy_cdp_pool.render._page.interception import FAVICON, PRIVATE_NETWORK
from scrapy_cdp_pool.render._page.page import Page
from scrapy_cdp_pool.render._page.page_setup import open_page
from scrapy_cdp_pool.render._request.context_options import ContextOptions
from scrapy_cdp_pool.render._request.cookies import (
    MAX_COOKIE_BYTES,
    MAX_COOKIE_HEADER_BYTES,
    MAX_COOKIES_PER_DOMAIN,
    Merged,
    cap_cookie_header,
    cap_stored_cookies,
    cookies_middleware,
    merge_into_jar,
)
from scrapy_cdp_pool.render._request.redirects import is_handed_back
from scrapy_cdp_pool.render._request.request_proxy import request_proxy, with_request_proxy
from scrapy_cdp_pool.render._request.response import build_response
from scrapy_cdp_pool.render._request.session import RenderHooks, RenderResult, render
from scrapy_cdp_pool.render._request.snapshots import SnapshotWriter
from scrapy_cdp_pool.render._request.spec import (
    RenderSpec,
    build_spec,
    default_header_values,
    is_rendered,
)
from scrapy_cdp_pool.render._request.user_agent import RefusedUserAgentWarning

__all__ = [
    "CONSOLE_MESSAGES_META_KEY",
    "FAVICON",
    "LIVE_PAGE_META_KEY",
    "MAX_COOKIES_PER_DOMAIN",
    "MAX_COOKIE_BYTES",
    "MAX_COOKIE_HEADER_BYTES",
    "PRIVATE_NETWORK",
    "Action",
    "CaptureRule",
    "ContextOptions",
    "DocumentResponse",
    "LivePages",
    "Merged",
    "Page",
    "RefusedAcceptWarning",
    "RefusedUserAgentWarning",
    "RenderHooks",
    "RenderResult",
    "RenderSpec",
    "SnapshotWriter",
    "build_response",
    "build_spec",
    "cap_cookie_header",
    "cap_stored_cookies",
    "content_length",
    "cookies_middleware",
    "default_header_values",
    "is_handed_back",
    "is_rendered",
    "merge_into_jar",
    "open_page",
    "parse_actions",
    "parse_capture",
    "parse_console",
    "render",
    "request_proxy",
    "with_request_proxy",
]
