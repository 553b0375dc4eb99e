"""RobotsGate: robots.txt for the navigations a page starts itself.

With ``ROBOTSTXT_OBEY``, Scrapy's ``RobotsTxtMiddleware`` checks each request
the spider makes, rendered ones included, and their redirects. A page's
script (or a meta refresh, or a click an action makes) can send the main
frame elsewhere: such a navigation into a path its host's robots.txt
disallows is refused before it leaves the browser (``Fetch.failRequest``),
counted in ``cdp_pool/robots_navigations_blocked`` and logged once per host,
and the page stays where it was. The rules are those the middleware loaded for
that host (``ROBOTSTXT_USER_AGENT``, else ``USER_AGENT``); a host it has not
loaded rules for yet is not held back. Subresources and the page's own
``fetch()`` are not checked (docs/response.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

from scrapy_cdp_pool.scrapy_internals import (
    loaded_robots_parser,
    robots_user_agent,
    running_downloader_middleware,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class RobotsGate:
    """Asks the crawler's ``RobotsTxtMiddleware`` about a page's own
    navigations; a no-op without ``ROBOTSTXT_OBEY``."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.enabled = crawler.settings.getbool("ROBOTSTXT_OBEY")
        self._warned_hosts: set[str] = set()

    def allows(self, url: str) -> bool:
        """Whether the page may navigate its main frame to ``url``."""
        if not self.enabled or not url.startswith(("http://", "https://")):
            return True
        middleware = running_downloader_middleware(self.crawler, RobotsTxtMiddleware)
        if middleware is None:
            return True
        netloc = urlsplit(url).netloc  # as the middleware keys its parsers
        parser = loaded_robots_parser(middleware, netloc)
        if parser is None or parser.allowed(url, robots_user_agent(middleware)):
            return True
        self.crawler.stats.inc_value("cdp_pool/robots_navigations_blocked")
        if netloc not in self._warned_hosts:
            self._warned_hosts.add(netloc)
            logger.info(
                "A page's own navigation to %s is forbidden by robots.txt: refused "
                "(ROBOTSTXT_OBEY; further ones to %s are counted in "
                "cdp_pool/robots_navigations_blocked)",
                url,
                netloc,
                extra={"crawler": self.crawler},
            )
        return False
