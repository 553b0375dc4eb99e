"""Commands sent once on each new CDP connection, from the settings.

``CDP_POOL_IGNORE_HTTPS_ERRORS`` on a remote endpoint: the embedded servers
take it as a flag (:mod:`~scrapy_cdp_pool.browser.pool.server_flags`); a remote
Chromium takes ``Security.setIgnoreCertificateErrors`` on its browser session,
for every context of the connection. A remote Lightpanda answers that command
but still verifies certificates (measured on 1.0.2: its TLS check is set only
by ``--insecure-disable-tls-host-verification`` at start), so the crawl warns
once that such an endpoint refuses certificates that do not verify.

``DOWNLOAD_MAXSIZE`` below Lightpanda's own 1 GiB on a remote Lightpanda: the
plugin cannot give it ``--http-max-response-size``, so the crawl warns once
per endpoint that its documents are checked only once loaded whole.
"""

from __future__ import annotations

import logging

from scrapy_cdp_pool.browser.backends import LIGHTPANDA
from scrapy_cdp_pool.browser.cdp import CDPConnection
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo
from scrapy_cdp_pool.browser.pool.server_flags import LIGHTPANDA_DEFAULT_MAX_RESPONSE
from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)


async def set_up_connection(
    cdp: CDPConnection,
    info: ServerInfo,
    config: PoolConfig,
    *,
    embedded: bool,
    warned: set[tuple[str, str]],
) -> None:
    """Send the connection-wide commands the settings ask for on ``cdp``
    (a connection to ``info``'s server; ``embedded``: a server this crawl
    started with the matching flags). ``warned``: the pool's record of the
    warnings given (once per endpoint and kind)."""
    if not embedded:
        _warn_maxsize_unbounded(info, config, warned)
    if not config.ignore_https_errors or embedded:
        return
    if not info.backend.ignore_https_errors_by_command:
        if ("tls", info.ws_url) not in warned:
            warned.add(("tls", info.ws_url))
            logger.warning(
                "CDP_POOL_IGNORE_HTTPS_ERRORS is set, but the remote Lightpanda endpoint %s "
                "verifies TLS certificates unless it was started with "
                "--insecure-disable-tls-host-verification",
                redact_url(info.ws_url),
            )
        return
    await cdp.send("Security.setIgnoreCertificateErrors", {"ignore": True})


def _warn_maxsize_unbounded(
    info: ServerInfo, config: PoolConfig, warned: set[tuple[str, str]]
) -> None:
    """Warn once per endpoint that ``DOWNLOAD_MAXSIZE`` cannot cut a remote
    Lightpanda's document while it arrives: Lightpanda reports no
    ``Network.dataReceived`` and takes its response cap only as a flag
    (``--http-max-response-size``) its starter gives it; the plugin checks
    the document once loaded. (A remote Chromium is cut while it arrives.)"""
    maxsize = config.download_maxsize
    if info.backend != LIGHTPANDA or ("maxsize", info.ws_url) in warned:
        return
    if not maxsize or maxsize >= LIGHTPANDA_DEFAULT_MAX_RESPONSE:
        return  # Lightpanda's own default cap is as small
    warned.add(("maxsize", info.ws_url))
    logger.warning(
        "DOWNLOAD_MAXSIZE (%d bytes) is checked on the remote Lightpanda endpoint %s only "
        "once a document has loaded whole: start it with --http-max-response-size %d to "
        "have it cut larger responses while they arrive",
        config.download_maxsize,
        redact_url(info.ws_url),
        config.download_maxsize,
    )
