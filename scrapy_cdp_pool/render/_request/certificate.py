"""The server's certificate of a rendered HTTPS document, for
``response.certificate`` (a ``twisted.internet.ssl.Certificate``, as Scrapy's
HTTP handler fills it).

Chromium's ``Network.getCertificate`` hands over the chain it verified (or was
told not to) for an origin the page loaded, as base64 DER, the server's own
first: that one is kept, as DER bytes, until the response is built. Lightpanda
1.0.2 has no such command (:attr:`Backend.hands_over_certificates
<scrapy_cdp_pool.browser.backends.Backend.hands_over_certificates>`): ``None``
there, as for a plain ``http://`` document, or when the browser answers none.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy_cdp_pool.errors import CDPError

if TYPE_CHECKING:
    from scrapy_cdp_pool.browser.backends import Backend
    from scrapy_cdp_pool.render._page.page import Page


async def server_certificate(
    page: Page, backend: Backend, url: str, timeout_s: float
) -> bytes | None:
    """The DER certificate the server of ``url`` (the document's, an
    ``https://`` one) showed the page, or ``None`` (another scheme, a backend
    that does not hand it over, no answer within ``timeout_s`` seconds)."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not backend.hands_over_certificates:
        return None
    try:
        answer = await page.command(
            "Network.getCertificate", {"origin": f"https://{parts.netloc}"}, timeout_s
        )
    except (CDPError, TimeoutError):
        return None
    names = answer.get("tableNames") if isinstance(answer, dict) else None
    if not names:
        return None
    try:
        return base64.b64decode(str(names[0]), validate=True)
    except (binascii.Error, ValueError):
        return None
