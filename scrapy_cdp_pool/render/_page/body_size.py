"""``DOWNLOAD_MAXSIZE`` / ``meta["download_maxsize"]`` enforced while the main
document's body arrives, not after the browser has it all.

- **Network events** (Chromium, the embedded one and remote endpoints):
  ``Network.dataReceived`` of the current main document (its ``requestId`` is
  the ``networkId`` ``Fetch.requestPaused`` gave it) adds up ``dataLength``
  (decoded bytes) and ``encodedDataLength`` (bytes on the wire); the first
  that passes the limit fails the render with
  :class:`~scrapy_cdp_pool.errors.ResponseTooLarge` and stops the page
  (``Page.stopLoading``; the failed render then disposes its context, which
  ends the transfer). Chromium already reports Network events on every page
  (it tells ``Set-Cookie`` only there), so this costs no extra command.
- **Lightpanda's own cap**: a Lightpanda started by the plugin gets
  ``--http-max-response-size`` from ``DOWNLOAD_MAXSIZE``
  (:func:`~scrapy_cdp_pool.browser.pool.server_flags.lightpanda_flags`); past it,
  Lightpanda ends the transfer and fails the navigation with the error text
  ``ResponseTooLarge`` (measured on 1.0.2), which :func:`navigation_too_large`
  turns into the same error. It does not report ``Network.dataReceived``, so
  its cap is the only bound while the body arrives (a smaller per-request
  ``download_maxsize`` is then checked on the DOM, after the load). A
  request whose ``download_maxsize`` is larger than that cap (or 0, no
  limit) would be cut at the cap, silently smaller than it asked: it is
  refused by name instead (:func:`check_within_cap`).
"""

from __future__ import annotations

from typing import Any

from scrapy_cdp_pool.browser.pool.server_flags import LIGHTPANDA_DEFAULT_MAX_RESPONSE
from scrapy_cdp_pool.errors import InvalidRequestMeta, ResponseTooLarge

#: Lightpanda's ``errorText`` for a transfer past ``--http-max-response-size``
LIGHTPANDA_TOO_LARGE = "ResponseTooLarge"


def navigation_too_large(url: str, failure: str | None, limit: int) -> ResponseTooLarge | None:
    """The error for a navigation the browser failed because its response
    was past its cap (``failure`` is the browser's error text), else None.
    ``limit`` is the cap in bytes; the size received is not told, so the
    message says "more than" it."""
    if failure != LIGHTPANDA_TOO_LARGE:
        return None
    limit = limit or LIGHTPANDA_DEFAULT_MAX_RESPONSE  # no maxsize: Lightpanda's own
    return ResponseTooLarge(url, limit, limit, expected=False, more_than=True)


def check_within_cap(url: str, maxsize: int, cap: int, source: str) -> None:
    """Refuse a request whose maxsize (bytes, 0: none) the server's response
    cap (``cap`` bytes, set by ``source``) would cut short.

    A request with no limit (``maxsize`` 0, Scrapy's way to lift
    ``DOWNLOAD_MAXSIZE`` for one request) is let through while ``cap`` is at
    least Lightpanda's own default (1 GiB, what bounded every response before
    the plugin set the flag); below that, the user lowered it, and it is refused.

    :raises InvalidRequestMeta: ``maxsize`` is above ``cap``, or 0 with
        ``cap`` under Lightpanda's default; not retried.
    """
    if maxsize and maxsize <= cap:
        return
    if not maxsize and cap >= LIGHTPANDA_DEFAULT_MAX_RESPONSE:
        return
    asked = f"{maxsize}" if maxsize else "0 (no limit)"
    raise InvalidRequestMeta(
        f"{url}: download_maxsize = {asked} is larger than the largest response the "
        f"Lightpanda server takes ({cap} bytes, its --http-max-response-size from {source}), "
        "which would cut it short: raise DOWNLOAD_MAXSIZE to the largest a request needs "
        "and set meta['download_maxsize'] lower where it should be smaller; not retried"
    )


class BodySizeGuard:
    """Counts the bytes of the current main document's body from
    ``Network.dataReceived`` events; ``limit`` is the request's maxsize in
    bytes (0: no limit)."""

    def __init__(self, url: str, limit: int) -> None:
        self.url = url
        self.limit = limit
        self._network_id: str | None = None
        self._decoded = 0  # bytes, as the browser holds them
        self._encoded = 0  # bytes on the wire
        #: the page's own responses whose size no ``Content-Length`` bounds
        #: (network id -> [decoded, encoded] bytes received so far), see
        #: :meth:`watch_unbounded`
        self.unbounded: dict[str, list[int]] = {}

    def watch(self, network_id: str | None) -> None:
        """Count the body of the document with this network id from now on
        (a new main document replaces the previous one)."""
        if network_id != self._network_id:
            self._network_id = network_id
            self._decoded = self._encoded = 0

    def on_data(self, params: dict[str, Any]) -> ResponseTooLarge | None:
        """Feed one ``Network.dataReceived``; the error once the watched
        document's body has passed the limit (None before, or for another
        request's data)."""
        if not self.limit or self._network_id is None:
            return None
        if params.get("requestId") != self._network_id:
            return None
        self._decoded += int(params.get("dataLength") or 0)
        self._encoded += int(params.get("encodedDataLength") or 0)
        received = max(self._decoded, self._encoded)
        if received > self.limit:
            self._network_id = None  # told once
            return ResponseTooLarge(self.url, received, self.limit, expected=False)
        return None

    def watch_unbounded(self, network_id: str) -> None:
        """Count the body of one of the page's own responses (a ``fetch()``,
        an XHR: not its main document) that no ``Content-Length`` bounds
        (chunked, or compressed: the decoded size is what the page holds),
        let through at the response stage; see :meth:`unbounded_past_limit`."""
        if self.limit:
            self.unbounded.setdefault(network_id, [0, 0])

    def unbounded_past_limit(self, params: dict[str, Any]) -> bool:
        """Feed one ``Network.dataReceived`` of a watched response (see
        :meth:`watch_unbounded`): True, once, when its body has passed the
        limit (decoded bytes or bytes on the wire, as for the document)."""
        counted = self.unbounded.get(str(params.get("requestId")))
        if counted is None:
            return False
        counted[0] += int(params.get("dataLength") or 0)
        counted[1] += int(params.get("encodedDataLength") or 0)
        if max(counted) > self.limit:
            del self.unbounded[params["requestId"]]  # told once
            return True
        return False
