"""Commands sent once on each new CDP connection, from the settings.

``CDP_POOL_IGNORE_HTTPS_ERRORS`` on a remote endpoint: the embedded servers
take it as a flag (:mod:`~scrapy_cdp_pool.pool.server_flags`); a remote
Chromium takes ``Security.setIgnoreCertificateErrors`` on its browser session,
for every context of the connection. A remote Lightpanda answers that command
but still verifies certificates (measured on 1.0.2: its TLS check is set only
by ``--insecure-disable-tls-host-verification`` at start), so the crawl warns
once that such an endpoint refuses certificates that do not verify.
"""

from __future__ import annotations

import logging

from scrapy_cdp_pool.cdp import CDPConnection
from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.pool.capabilities import ServerInfo

logger = logging.getLogger(__name__)

_warned: set[str] = set()


async def set_up_connection(
    cdp: CDPConnection, info: ServerInfo, config: PoolConfig, *, embedded: bool
) -> None:
    """Send the connection-wide commands the settings ask for on ``cdp``
    (a connection to ``info``'s server; ``embedded``: a server this crawl
    started with the matching flags)."""
    if not config.ignore_https_errors or embedded:
        return
    if not info.backend.ignore_https_errors_by_command:
        if info.ws_url not in _warned:
            _warned.add(info.ws_url)
            logger.warning(
                "CDP_POOL_IGNORE_HTTPS_ERRORS is set, but the remote Lightpanda endpoint %s "
                "verifies TLS certificates unless it was started with "
                "--insecure-disable-tls-host-verification",
                redact_url(info.ws_url),
            )
        return
    await cdp.send("Security.setIgnoreCertificateErrors", {"ignore": True})
