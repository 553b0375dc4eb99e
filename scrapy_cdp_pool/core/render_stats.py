"""RenderStats: the one observer that counts what rendered requests did in the
crawler's stats (``cdp_pool/*``, listed in docs/stats.md): pages per
connection, outcomes, errors, blocked resources, captures, console messages,
and the pool's totals at spider close."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.core.boundary import error_kind
from scrapy_cdp_pool.render import (
    FAVICON,
    MAX_COOKIE_BYTES,
    MAX_COOKIE_HEADER_BYTES,
    MAX_COOKIES_PER_DOMAIN,
    PRIVATE_NETWORK,
    content_length,
    is_handed_back,
)

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.browser.pool.lease import ContextLease
    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
    from scrapy_cdp_pool.render import LivePages, Merged, RenderResult

logger = logging.getLogger(__name__)


class RenderStats:
    """Counts one crawler's renders; ``own_pool`` is the crawl's pool (pages
    on another pool are the render ladder's Chromium's)."""

    def __init__(self, crawler: Crawler, own_pool: ConnectionPool) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.own_pool = own_pool
        self._private_hosts_logged: set[str] = set()
        self._warned_whole_downloads = False
        self._warned_cookie_caps = False
        self._hosts_cookies_not_sent: set[str] = set()

    def page(self, pool: ConnectionPool, lease: ContextLease) -> None:
        """This crawler's pages per connection of the pool (or on dedicated
        servers), counted in its own stats: exact on a shared pool too; the
        render ladder's Chromium pool's under ``cdp_pool/ladder/chromium``."""
        connection = lease.connection
        if pool is not self.own_pool:
            self.stats.inc_value(f"cdp_pool/ladder/chromium/connection/{connection.index}/pages")
        elif pool.owns(connection):
            self.stats.inc_value(f"cdp_pool/connection/{connection.index}/pages")
        else:
            self.stats.inc_value("cdp_pool/dedicated_servers/pages")

    def _log_private_hosts(self, request: Request, hosts: list[str]) -> None:
        """One WARNING per host a page was refused by the private-network rule."""
        for host in hosts:
            if host in self._private_hosts_logged:
                continue
            self._private_hosts_logged.add(host)
            logger.warning(
                "A page's request to %s was refused: a private network address (loopback, "
                "private, link-local or unspecified) the page %s may not reach "
                "(CDP_POOL_ALLOW_PRIVATE_NETWORKS = True allows it; further ones to %s are "
                "counted in cdp_pool/private_network_blocked)",
                host,
                request.url,
                host,
                extra={"crawler": self.crawler},
            )

    def cookies_dropped(self, request: Request, merged: Merged) -> None:
        """Cookies the browser had that were not copied into Scrapy's jar,
        past a browser's caps: counted, and one WARNING per crawl."""
        self.stats.inc_value("cdp_pool/cookies_dropped", merged.dropped)
        if self._warned_cookie_caps:
            return
        self._warned_cookie_caps = True
        domains = sorted(set(merged.too_many) | set(merged.too_large))
        logger.warning(
            "%s: %d cookie(s) the page set for %s were not copied into Scrapy's cookie jar: "
            "past %d cookies per domain (%d) or %d bytes of name and value (%d), as a browser "
            "caps its store (warned once; further ones are counted in cdp_pool/cookies_dropped)",
            request,
            merged.dropped,
            ", ".join(domains),
            MAX_COOKIES_PER_DOMAIN,
            sum(merged.too_many.values()),
            MAX_COOKIE_BYTES,
            sum(merged.too_large.values()),
            extra={"crawler": self.crawler},
        )

    def cookies_not_sent(self, request: Request, host: str, count: int) -> None:
        """``count`` cookies of Scrapy's jar left out of ``request``'s
        ``Cookie`` header, past :data:`MAX_COOKIE_HEADER_BYTES`: counted in
        ``cdp_pool/cookies_not_sent``, one WARNING per host."""
        self.stats.inc_value("cdp_pool/cookies_not_sent", count)
        if host in self._hosts_cookies_not_sent:
            return
        self._hosts_cookies_not_sent.add(host)
        logger.warning(
            "%s: %d cookie(s) of Scrapy's jar not sent: its Cookie header would pass %d bytes, "
            "more than servers accept (answered 400); the newest of the least specific paths are "
            "left out (warned once for %s; further ones are counted in cdp_pool/cookies_not_sent)",
            request, count, MAX_COOKIE_HEADER_BYTES, host, extra={"crawler": self.crawler},
        )  # fmt: skip

    def error(self, error: BaseException) -> None:
        """A failed render: ``cdp_pool/errors/<kind>``."""
        self.stats.inc_value(f"cdp_pool/errors/{error_kind(error)}")

    def result(
        self,
        request: Request,
        result: RenderResult,
        seconds: float,
        pool: ConnectionPool,
        warnsize: int,
    ) -> None:
        """A render that produced a response (``seconds``: from its slot)."""
        self.stats.inc_value(_outcome_stat(result))
        self.stats.max_value("cdp_pool/render_seconds_max", round(seconds, 3))
        self.stats.max_value("cdp_pool/pages_in_flight_max", pool.pages_in_flight_max)
        if result.blocked:
            self._count_blocked(result.blocked)
        self._log_private_hosts(request, result.private_hosts)
        if result.downloads or result.downloads_cut or result.downloads_fetched_whole:
            self._count_downloads(request, result)
        if result.network is not None:
            self._count_captured(result.network)
        if result.console is not None:
            self._count_console(result.console)
        self._warn_size(request, result, warnsize)

    def _count_blocked(self, blocked: dict[str, int]) -> None:
        """The page's requests failed before they left, by why."""
        for resource_type, count in blocked.items():
            if resource_type == FAVICON:  # the browser's own request, not the page's
                self.stats.inc_value("cdp_pool/favicon_requests_blocked", count)
            elif resource_type == PRIVATE_NETWORK:
                self.stats.inc_value("cdp_pool/private_network_blocked", count)
            else:
                self.stats.inc_value("cdp_pool/resources_blocked", count)
                self.stats.inc_value(f"cdp_pool/resources_blocked/{resource_type}", count)

    def _count_downloads(self, request: Request, result: RenderResult) -> None:
        """Downloads the page started: counted; Lightpanda's fetched whole
        before they could be stopped: warned once."""
        if result.downloads:
            self.stats.inc_value("cdp_pool/page_downloads", result.downloads)
        if result.downloads_cut:
            self.stats.inc_value("cdp_pool/page_downloads_cut", result.downloads_cut)
        if result.downloads_fetched_whole and not self._warned_whole_downloads:
            self._warned_whole_downloads = True
            logger.warning(
                "The page %s started a download, which Lightpanda fetched whole before it "
                "could be stopped (up to DOWNLOAD_MAXSIZE, its --http-max-response-size; a "
                "larger one fails the page's navigation): the page was kept, but the bytes "
                "were transferred to the browser. CDP_POOL_PAGE_DOWNLOAD_MAX_MB bounds what is "
                "kept, and what is fetched on Chromium only; lower DOWNLOAD_MAXSIZE to bound "
                "the transfer on Lightpanda (warned once)",
                request.url,
                extra={"crawler": self.crawler},
            )

    def _count_captured(self, network: list[dict[str, Any]]) -> None:
        self.stats.inc_value("cdp_pool/network_captured", len(network))
        skipped = sum(1 for entry in network if entry["body_skipped"])
        if skipped:
            self.stats.inc_value("cdp_pool/network_bodies_skipped", skipped)

    def _count_console(self, console: list[dict[str, Any]]) -> None:
        kinds = [entry["type"] for entry in console]
        messages = sum(1 for kind in kinds if kind not in ("exception", "truncated"))
        if messages:
            self.stats.inc_value("cdp_pool/console_messages", messages)
        if "exception" in kinds:
            self.stats.inc_value("cdp_pool/page_errors", kinds.count("exception"))

    def _warn_size(self, request: Request, result: RenderResult, warnsize: int) -> None:
        """``meta["download_warnsize"]`` or ``DOWNLOAD_WARNSIZE``, in plain
        Scrapy's words."""
        if not warnsize:
            return
        announced = None if result.rendered else content_length(result.headers)
        size = announced if announced is not None else len(result.body)
        if size > warnsize:
            logger.warning(
                "%s %d bytes which is larger than download warn size (%d) in request %s.",
                "Received" if announced is None else "Expected to receive",
                size,
                warnsize,
                request,
                extra={"crawler": self.crawler},
            )

    async def closed(self, live: LivePages) -> None:
        """At spider close (before the stats are dumped): the pool's contexts
        opened and closed, reconnects and server restarts (the whole pool's,
        shared or not); live pages still open are closed first."""
        await live.close()
        if live.opened:
            self.stats.set_value("cdp_pool/live_pages_open_max", live.open_max)
            self.stats.set_value("cdp_pool/live_pages_closed_at_deadline", live.closed_at_deadline)
            self.stats.set_value("cdp_pool/live_pages_closed_unreached", live.closed_unreached)
            self.stats.set_value("cdp_pool/live_pages_closed_passed_on", live.closed_passed_on)
        pool = self.own_pool
        await pool.wait_disposed()
        if pool.start_retries:
            self.stats.set_value("cdp_pool/server_start_retries", pool.start_retries)
        rows = pool.snapshot()
        if not rows:
            return
        for key in ("contexts_opened", "contexts_closed", "reconnects", "retired"):
            self.stats.set_value(f"cdp_pool/{key}", sum(row[key] for row in rows))
        if pool.server is not None:
            self.stats.set_value("cdp_pool/server_restarts", pool.server.restarts)
            favicons = pool.server.favicon_block
            if favicons is not None and favicons.blocked:  # those no page's pattern took
                self.stats.inc_value("cdp_pool/favicon_requests_blocked", favicons.blocked)
        dedicated = pool.dedicated
        if dedicated is not None and dedicated.started:
            self.stats.set_value("cdp_pool/dedicated_servers/started", dedicated.started)
            self.stats.set_value("cdp_pool/dedicated_servers/stopped", dedicated.stopped)
            self.stats.set_value("cdp_pool/dedicated_servers/running_max", dedicated.running_max)


def _outcome_stat(result: RenderResult) -> str:
    """The stat a render counts in: a page, a raw document, or a redirect
    returned to Scrapy's ``RedirectMiddleware``."""
    if result.rendered:
        return "cdp_pool/pages"
    if is_handed_back(result.status, result.headers):
        return "cdp_pool/redirects_returned"
    return "cdp_pool/documents_raw"
