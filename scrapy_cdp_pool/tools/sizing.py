"""Sizing a CDP server: open more and more pages of a site, keep them open, and
read the server's memory at each step; then after closing the pages, and after
closing the connections. From those: the memory one open page costs, and one
connection, for the formula

    server MB ~ idle + pages x MB per page + connections x MB per connection

Each page is opened as the pool opens it (a fresh browser context, a target
attached as a flat session, ``Page.enable``, navigate, wait for ``load``) and
left open. Lightpanda allows one context per connection, so on Lightpanda each
page past ``connections`` gets a connection of its own; on Chromium the pages
share ``connections`` round robin.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

import psutil

from scrapy_cdp_pool.browser.backends import LIGHTPANDA, backend_named
from scrapy_cdp_pool.browser.cdp import CDPConnection, CDPError
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo, discover
from scrapy_cdp_pool.browser.pool.embedded_server import EmbeddedServer
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.errors import NavigationFailed, RenderError
from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.render import ContextOptions, Page, RenderSpec, open_page
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.shared.process_memory import TreeMemory, process_tree_memory

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class SizingStep:
    """The server with ``pages`` pages open over ``connections`` connections;
    ``failed_pages`` of them did not load within the timeout (they stay open
    all the same)."""

    pages: int
    connections: int
    server_memory_mb: float | None
    failed_pages: int = 0


@dataclass
class SizingReport:
    """What :func:`measure` saw. Memory in MB (PSS where the OS gives it, see
    ``memory_source``); ``None`` where the server's process is not known (a
    remote endpoint)."""

    url: str
    server: str
    server_pid: int | None
    memory_source: str
    base_connections: int
    idle_mb: float | None = None
    connections_mb: float | None = None
    steps: list[SizingStep] = field(default_factory=list)
    after_closing_pages_mb: float | None = None
    after_closing_connections_mb: float | None = None

    @property
    def per_connection_mb(self) -> float | None:
        """MB one connection costs with no page: (``base_connections``
        connections - idle) / ``base_connections``."""
        if self.idle_mb is None or self.connections_mb is None or not self.base_connections:
            return None
        return (self.connections_mb - self.idle_mb) / self.base_connections

    @property
    def per_page_mb(self) -> float | None:
        """MB one open page costs, from the largest step: its memory less the
        connections' share, over its pages."""
        per_connection = self.per_connection_mb
        measured = [s for s in self.steps if s.server_memory_mb is not None and s.pages]
        if per_connection is None or not measured or self.connections_mb is None:
            return None
        last = measured[-1]
        last_mb = last.server_memory_mb or 0.0
        extra_connections = last.connections - self.base_connections
        pages_mb = last_mb - self.connections_mb - extra_connections * per_connection
        return pages_mb / last.pages

    def formula(self) -> str:
        if self.idle_mb is None or self.per_page_mb is None or self.per_connection_mb is None:
            return "server MB: n/a (the server's memory cannot be measured)"
        return (
            f"server MB ~ {self.idle_mb:.1f} + pages x {self.per_page_mb:.2f}"
            f" + connections x {self.per_connection_mb:.2f}"
        )

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["per_connection_mb"] = self.per_connection_mb
        data["per_page_mb"] = self.per_page_mb
        data["formula"] = self.formula()
        return data


def find_listening_pid(endpoint: str) -> int | None:
    """The PID of the process listening on a loopback ``endpoint``'s port, to
    measure a server started by hand; ``None`` for another host or when it
    cannot be found."""
    parts = urlsplit(endpoint)
    if parts.hostname not in _LOOPBACK or parts.port is None:
        return None
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return None
    for connection in connections:
        if (
            connection.status == psutil.CONN_LISTEN
            and connection.laddr
            and connection.laddr.port == parts.port
            and connection.pid
        ):
            return int(connection.pid)
    return None


@dataclass
class _OpenPage:
    cdp: CDPConnection
    context_id: str
    page: Page | None = None
    loaded: bool = False
    #: why it did not load (the browser's words), ``None`` once loaded
    error: str | None = None


async def measure(
    url: str,
    *,
    browser: str = LIGHTPANDA.kind,
    endpoint: str | None = None,
    server_pid: int | None = None,
    connections: int = 4,
    steps: Sequence[int] = (10, 40, 100),
    timeout_s: float = 30.0,
    settle_s: float = 1.0,
    progress: Callable[[str], None] = lambda line: None,
    context: ContextOptions | None = None,
) -> SizingReport:
    """Measure the server's memory for ``steps`` open pages of ``url``.

    With no ``endpoint`` an embedded server of ``browser`` is started (and
    stopped at the end); with one, its process is ``server_pid`` or, on a
    loopback address, the process listening on its port. ``settle_s``:
    seconds to let memory settle (pages' scripts, processes exiting) before
    each reading. ``progress`` is called with one line per reading.
    ``context``: open every page as this profile (a stored profile's
    :class:`~scrapy_cdp_pool.render.ContextOptions`).

    :raises ValueError: ``steps`` not increasing positive counts, or
        ``connections`` < 1.
    :raises ServerStartError: the embedded server did not start.
    :raises CDPError, OSError: the server does not answer.
    :raises NavigationFailed: no page of the first step loaded (the site is
        down, the URL does not resolve): there is nothing to measure.
    """
    steps = list(steps)
    if not steps or any(s < 1 for s in steps) or steps != sorted(set(steps)):
        raise ValueError(f"steps {steps!r}: expected increasing page counts >= 1")
    if connections < 1:
        raise ValueError(f"connections {connections!r}: expected >= 1")
    server: EmbeddedServer | None = None
    server_options = context.server_options() if context is not None else None
    if endpoint is None:
        # Lightpanda needs one connection per page: start it with room for them.
        # As a crawl's dedicated server: the profile's time zone for the whole
        # Lightpanda server (its proxy goes on each context).
        server = embedded_server(
            PoolConfig(browser=browser, connections=max(connections, steps[-1])),
            server_options if backend_named(browser).dedicated_servers else None,
        )
    run = _Run(url, server, timeout_s, settle_s, progress, context)
    try:
        await run.start(endpoint, server_pid, server_options)
        report = await run.first_reading(connections)
        await run.connect(connections)
        report.connections_mb = await run.reading(f"{_count(connections, 'connection')}, no page")
        for target in steps:
            report.steps.append(await run.open_pages(target, connections, first=steps[0]))
        await run.close_pages()
        report.after_closing_pages_mb = await run.reading("after closing the pages")
        await run.close_connections()
        report.after_closing_connections_mb = await run.reading("after closing the connections")
        return report
    finally:
        await run.cleanup()


class _Run:
    """One run of :func:`measure`: its server, connections and open pages."""

    #: what the server is (set by :meth:`start`)
    info: ServerInfo

    def __init__(
        self,
        url: str,
        server: EmbeddedServer | None,
        timeout_s: float,
        settle_s: float,
        progress: Callable[[str], None],
        context: ContextOptions | None,
    ) -> None:
        self.url = url
        self.server = server
        self.timeout_s = timeout_s
        self.settle_s = settle_s
        self.progress = progress
        self.context = context
        self.where = "embedded"
        self.server_pid: int | None = None
        self.connections: list[CDPConnection] = []
        self.pages: list[_OpenPage] = []

    async def start(
        self, endpoint: str | None, server_pid: int | None, server_options: Any
    ) -> None:
        """Start the embedded server, or find the endpoint's; check the
        profile's needs against it.

        :raises ValueError: the server cannot honour the profile.
        """
        server, context = self.server, self.context
        if server is not None:
            await server.ensure_running()
            self.info = info = await server.server_info(self.timeout_s)
            self.server_pid = server.pid
        else:
            self.where = f"endpoint {redact_url(endpoint or '')}"
            self.info = info = await discover(endpoint or "", self.timeout_s)
            self.server_pid = server_pid
            if server_pid is None:
                self.server_pid = find_listening_pid(endpoint or "")
        needs = context.requirements() if context is not None else frozenset()
        if server is not None and server_options is not None and info.backend.dedicated_servers:
            needs -= server_options.covers
        if context is not None and needs & info.unsupported:
            missing = ", ".join(sorted(needs & info.unsupported))
            raise ValueError(
                f"profile {context.name!r} needs {missing}: {info.label} cannot honour it"
            )

    def _read(self) -> TreeMemory | None:
        return process_tree_memory(self.server_pid) if self.server_pid is not None else None

    async def first_reading(self, connections: int) -> SizingReport:
        """The report, with the idle server's reading."""
        first = self._read()
        report = SizingReport(
            url=self.url,
            server=f"{self.info.label} ({self.where})",
            server_pid=self.server_pid,
            memory_source=first.source if first is not None else "n/a",
            base_connections=connections,
        )
        self.progress(
            f"server: {report.server}, pid {self.server_pid or 'unknown'}, "
            f"memory = {report.memory_source.upper()} of its process tree"
        )
        report.idle_mb = await self.reading("idle")
        return report

    async def reading(self, label: str) -> float | None:
        """The server's memory (MB) once it settled, told to ``progress``."""
        if self.settle_s > 0:
            await asyncio.sleep(self.settle_s)  # let memory settle before reading it
        memory = self._read()
        value = None if memory is None else round(memory.memory_mb, 1)
        self.progress(f"{label:<40} {_mb(value)}")
        return value

    async def _connect_one(self) -> CDPConnection:
        if self.server is not None:  # its own channel (a Unix socket, Chromium's pipe)
            return await self.server.connect(self.info, self.timeout_s)
        return await _connect(self.info, self.timeout_s)

    async def connect(self, count: int) -> None:
        """Open ``count`` connections at once."""
        opened = await asyncio.gather(*(self._connect_one() for _ in range(count)))
        self.connections.extend(opened)

    async def open_pages(self, target: int, connections: int, first: int) -> SizingStep:
        """Open pages until ``target`` are open (a connection each where the
        server allows one context per connection), then read the memory.

        :raises NavigationFailed: no page of the first step (``first``) loaded.
        """
        info = self.info
        needed = target if info.max_contexts_per_connection == 1 else connections
        while len(self.connections) < needed:
            self.connections.append(await self._connect_one())
        gate = asyncio.Semaphore(max(4, connections))  # pages loading at once

        async def open_one(index: int) -> _OpenPage:
            async with gate:
                cdp = self.connections[index % len(self.connections)]
                return await _open_page(cdp, info, self.url, self.timeout_s, self.context)

        pages = self.pages
        pages.extend(await asyncio.gather(*(open_one(i) for i in range(len(pages), target))))
        failed = sum(1 for p in pages if not p.loaded)
        if failed == len(pages) == target == first:  # nothing to measure
            raise NavigationFailed(
                self.url, f"no page loaded ({target} of {target}): {pages[0].error}"
            )
        memory_mb = await self.reading(
            f"{_count(target, 'page')} open, {_count(len(self.connections), 'connection')}"
            + (f" ({failed} not loaded)" if failed else "")
        )
        return SizingStep(target, len(self.connections), memory_mb, failed)

    async def close_pages(self) -> None:
        for page in self.pages:
            await _close_page(page, self.timeout_s)
        self.pages.clear()

    async def close_connections(self) -> None:
        shared = self.server is not None and self.server.shared_channel
        for cdp in self.connections:
            if not shared:  # closing a pipe stops Chromium
                await cdp.close()
        self.connections.clear()

    async def cleanup(self) -> None:
        """What is still open closed, the embedded server stopped."""
        for page in self.pages:
            if page.page is not None:
                page.page.detach()
        for cdp in self.connections:
            await cdp.close()
        if self.server is not None:
            await self.server.stop()


async def _connect(info: ServerInfo, timeout_s: float) -> CDPConnection:
    return await CDPConnection.open(
        info.ws_url, open_timeout_s=timeout_s, command_timeout_s=timeout_s
    )


async def _open_page(
    cdp: CDPConnection,
    info: ServerInfo,
    url: str,
    timeout_s: float,
    context: ContextOptions | None = None,
) -> _OpenPage:
    result = await cdp.send(
        "Target.createBrowserContext",
        context.context_params(
            info.unsupported, credentials_in_url=info.backend.proxy_credentials_in_url
        )
        if context
        else {},
    )
    opened = _OpenPage(cdp, result["browserContextId"])
    spec = RenderSpec(url=url, navigation_timeout_s=timeout_s, context=context)
    try:
        if context is not None and context.cookies:
            await cdp.send(
                "Storage.setCookies",
                {"browserContextId": opened.context_id, "cookies": context.storage_cookies()},
            )
        opened.page = await open_page(
            cdp,
            opened.context_id,
            spec,
            network_events=not info.set_cookie_in_fetch_headers,
            default_user_agent=info.default_user_agent,
            unsupported=info.unsupported,
        )
        await opened.page.navigate(timeout_s)
        opened.loaded = True
    except (CDPError, RenderError, TimeoutError) as e:
        opened.loaded = False  # counted as not loaded; it stays open like the others
        opened.error = (e.reason if isinstance(e, NavigationFailed) else str(e)) or type(e).__name__
    return opened


async def _close_page(opened: _OpenPage, timeout_s: float) -> None:
    if opened.page is not None:
        opened.page.detach()
    with contextlib.suppress(CDPError):
        await opened.cdp.send(
            "Target.disposeBrowserContext",
            {"browserContextId": opened.context_id},
            timeout_s=timeout_s,
        )


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} MB"


def report_lines(report: SizingReport) -> list[str]:
    """The summary after the readings: derived costs and the formula."""
    lines = [
        f"MB per connection (no page): {_mb2(report.per_connection_mb)}",
        f"MB per open page:            {_mb2(report.per_page_mb)}",
        report.formula(),
    ]
    per_page, per_connection = report.per_page_mb, report.per_connection_mb
    if report.idle_mb is not None and per_page is not None and per_connection is not None:
        last = report.steps[-1]
        estimate = report.idle_mb + last.pages * per_page + last.connections * per_connection
        lines.append(
            f"e.g. {last.pages} pages on {last.connections} connections ~ {estimate:.0f} MB"
        )
    return lines


def _mb2(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} MB"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
