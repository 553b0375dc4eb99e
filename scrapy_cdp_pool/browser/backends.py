"""Backends: what each kind of CDP browser is, can do, and needs.

A :class:`Backend` owns its capabilities (:class:`Capability`), its render
quirks and its limits; code elsewhere asks it (``backend.can(Capability.X)``,
``backend.pipeline_navigation``) instead of comparing the browser's kind as a
string. Three exist: :data:`LIGHTPANDA`, :data:`CHROMIUM` and :data:`UNKNOWN`
(a ``ws://`` endpoint with no ``/json/version``, taken for a Chromium). A
remote endpoint of either kind is the same backend as the embedded one: what
differs is only whether the plugin starts the server (``embedded``).

Measured on Lightpanda 1.0.2 (docs/backends.md): one browser context per
connection and one page per context; a user agent containing "Mozilla" is
replaced by its own, time-zone overrides do nothing; a proxy per context
(``Target.createBrowserContext``'s ``proxyServer``, HTTP and HTTPS through
``CONNECT``), with its credentials in the proxy's URL (a 407 to
``CONNECT`` never comes as ``Fetch.authRequired``: the page failed with
``CouldntConnect``);
``Set-Cookie`` headers are visible in ``Fetch.requestPaused`` (Chromium hides
them there and reports them only in ``Network.responseReceivedExtraInfo``).

A leaf: it imports nothing of the plugin but :mod:`scrapy_cdp_pool.errors`'s
layer, so the pool, the render and the runtime can all hold backends.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy_cdp_pool.settings.config import PoolConfig


class Capability(StrEnum):
    """What a request may need of its backend. Each is also its string
    (``Capability.PROXY == "proxy"``): sets of either mix."""

    #: a user agent containing "Mozilla" (Lightpanda replaces it by its own)
    USER_AGENT_MOZILLA = "user_agent_mozilla"
    #: a time zone override
    TIMEZONE = "timezone"
    #: a proxy per browser context
    PROXY = "proxy"
    #: a geolocation override
    GEOLOCATION = "geolocation"
    #: page actions that need a layout (scrolling, JPEG screenshots...)
    LAYOUT = "layout"


@dataclass(frozen=True)
class Backend:
    """One kind of CDP browser. Compared by ``kind``; see the module's
    docstring."""

    kind: str  # "lightpanda", "chromium" or "unknown": for labels and stats only
    #: capabilities it lacks
    unsupported: frozenset[Capability] = frozenset()
    #: most browser contexts one connection may hold, ``None``: no limit
    max_contexts_per_connection: int | None = None
    #: ``Set-Cookie`` headers visible in ``Fetch.requestPaused``
    set_cookie_in_fetch_headers: bool = False
    #: navigation sent without waiting for the page's set-up commands'
    #: answers (Lightpanda answers them in order)
    pipeline_navigation: bool = False
    #: the browser answers JavaScript dialogs itself
    answers_dialogs: bool = False
    #: new targets must be attached to with auto-attach on the connection
    auto_attach: bool = False
    #: pages kept for reuse by default (``CDP_POOL_REUSE_PAGES`` unset)
    reuse_pages_by_default: bool = True
    #: an embedded server of it may be dedicated to one profile's time zone
    #: (``CDP_POOL_DEDICATED_SERVERS``)
    dedicated_servers: bool = False
    #: a context's proxy takes its credentials in its URL
    #: (``proxyServer: "http://user:password@host:port"``), sent with every
    #: request, ``CONNECT`` included (Lightpanda); else they answer the
    #: proxy's challenge (``Fetch.authRequired``; Chromium refuses them there)
    proxy_credentials_in_url: bool = False
    #: why a page's connection closed (past its JavaScript heap ceiling, a
    #: script stopped by the watchdog) is told by the embedded server's own
    #: report on stderr (:mod:`~scrapy_cdp_pool.browser.pool.lightpanda_reports`), not
    #: by the page's crash
    crashes_told_on_stderr: bool = False
    #: a render that runs out of time asks the page's main thread for ``1``:
    #: no answer means a script that does not yield (see
    #: :mod:`~scrapy_cdp_pool.render._request.script_stall`); Lightpanda's own
    #: watchdog tells instead
    probes_stalled_scripts: bool = True
    #: the browser itself asks each site for ``/favicon.ico`` (Chromium, for
    #: a page that declares no icon): a request the page did not make and
    #: plain Scrapy would not send, failed at the request stage
    #: (:func:`~scrapy_cdp_pool.render._page.page_setup.fetch_params`)
    fetches_favicon: bool = True
    #: the browser decodes an HTML document by its byte order mark when its
    #: ``Content-Type`` names no charset, as the HTML standard says (Lightpanda
    #: 1.0.2 does not: a UTF-16 page with a BOM came back garbled), else the
    #: page's body is read and handed back labelled
    #: (:class:`~scrapy_cdp_pool.render._page.document_response.DocumentResponses`)
    sniffs_byte_order_mark: bool = True
    #: the server flag that caps a page's JavaScript heap, and its form
    #: (``{mb}``: the ceiling in MB); one argument per item
    heap_limit_flag: str = "--js-flags"
    heap_limit_args_format: tuple[str, ...] = ("--js-flags=--max-old-space-size={mb}",)
    #: the ``PoolConfig`` field of the user's own server arguments
    #: (``CDP_POOL_CHROMIUM_ARGS``, ``CDP_POOL_LIGHTPANDA_ARGS``)
    args_field: str = "chromium_args"
    #: TLS errors are ignored per connection (``Security.setIgnoreCertificateErrors``);
    #: else only by a flag the server starts with
    ignore_https_errors_by_command: bool = True
    #: a paused response's body can be read in chunks
    #: (``Fetch.takeResponseBodyAsStream``, ``IO.read``), so a raw main
    #: document is cut at ``DOWNLOAD_MAXSIZE`` instead of read whole
    streams_response_bodies: bool = True
    #: a response is paused at the ``Fetch`` response stage as soon as its
    #: headers arrive, before its body (Chromium); Lightpanda 1.0.2 pauses
    #: once it has the whole body (at most its ``--http-max-response-size``):
    #: a download a page starts is then fetched whole before it can be stopped
    pauses_before_body: bool = True
    #: ``Input.dispatchKeyEvent`` reaches the focused element inside a shadow
    #: root; Lightpanda 1.0.2 sends it to the outermost shadow host (its
    #: ``document.activeElement``), so the key actions dispatch it on the
    #: element by script there (:mod:`~scrapy_cdp_pool.render._actions.shadow_keys`)
    keys_reach_shadow_roots: bool = True
    #: ``Network.getCertificate`` hands over the server's certificate chain
    #: (DER, base64) for an origin the page loaded; Lightpanda 1.0.2 has no
    #: such command (``response.certificate`` stays ``None`` there)
    hands_over_certificates: bool = True

    def can(self, capability: Capability | str) -> bool:
        """Whether it honours ``capability``."""
        return capability not in self.unsupported

    def missing(self, needs: frozenset[str]) -> frozenset[str]:
        """Which of ``needs`` it lacks."""
        return frozenset(needs) & self.unsupported

    def user_args(self, config: PoolConfig) -> tuple[str, ...]:
        """The user's own arguments for an embedded server of this backend."""
        args: tuple[str, ...] = getattr(config, self.args_field)
        return args

    def heap_limit_args(self, limit_mb: int, user_args: tuple[str, ...]) -> list[str]:
        """The server arguments capping a page's JavaScript heap at
        ``limit_mb`` MB; none when the user's own arguments (``user_args``)
        set :attr:`heap_limit_flag` themselves."""
        if sets_flag(user_args, self.heap_limit_flag):
            return []
        return [arg.format(mb=limit_mb) for arg in self.heap_limit_args_format]

    def pool_config(self, config: PoolConfig) -> PoolConfig:
        """``config`` for an embedded pool of this backend: the crawl's own
        when it is the crawl's backend, else the same settings with the
        browser replaced and no endpoints (a second, embedded pool)."""
        if backend_of(config) == self:
            return config
        return dataclasses.replace(config, browser=self.kind, endpoints=())

    def __str__(self) -> str:
        return self.kind


LIGHTPANDA = Backend(
    "lightpanda",
    unsupported=frozenset({Capability.USER_AGENT_MOZILLA, Capability.TIMEZONE, Capability.LAYOUT}),
    proxy_credentials_in_url=True,
    max_contexts_per_connection=1,
    set_cookie_in_fetch_headers=True,
    pipeline_navigation=True,
    answers_dialogs=True,
    auto_attach=True,
    reuse_pages_by_default=False,
    dedicated_servers=True,
    crashes_told_on_stderr=True,
    probes_stalled_scripts=False,
    fetches_favicon=False,
    streams_response_bodies=False,
    sniffs_byte_order_mark=False,
    pauses_before_body=False,
    keys_reach_shadow_roots=False,
    hands_over_certificates=False,
    heap_limit_flag="--v8-max-heap-mb",
    heap_limit_args_format=("--v8-max-heap-mb", "{mb}"),
    ignore_https_errors_by_command=False,
    args_field="lightpanda_args",
)
CHROMIUM = Backend("chromium")
UNKNOWN = Backend("unknown")
"""A ``ws://`` endpoint with no ``/json/version``: used with Chromium's
capabilities."""


def sets_flag(args: tuple[str, ...], flag: str) -> bool:
    """Whether the user's own server arguments (``CDP_POOL_LIGHTPANDA_ARGS``,
    ``CDP_POOL_CHROMIUM_ARGS``) give ``flag``, as ``flag value`` or
    ``flag=value``: the plugin's own value for it is then left out."""
    return any(arg.split("=", 1)[0] == flag for arg in args)


BACKENDS: dict[str, Backend] = {b.kind: b for b in (LIGHTPANDA, CHROMIUM, UNKNOWN)}


def backend_named(kind: str) -> Backend:
    """The backend of ``kind`` (``CDP_POOL_BROWSER``'s values, ``"unknown"``).

    :raises ValueError: no such backend.
    """
    try:
        return BACKENDS[kind]
    except KeyError:
        raise ValueError(
            f"no CDP backend {kind!r}; allowed: {', '.join(sorted(BACKENDS))}"
        ) from None


def backend_of(config: PoolConfig) -> Backend:
    """The crawl's backend: ``CDP_POOL_BROWSER``'s (with endpoints, the kind
    each endpoint reports decides per connection; this is the one the
    settings name)."""
    return backend_named(config.browser)
