"""The CDP client's errors, kept importable here; they live in
:mod:`scrapy_cdp_pool.errors`."""

from __future__ import annotations

from scrapy_cdp_pool.errors import (
    CDPBacklogExceeded,
    CDPConnectError,
    CDPConnectionClosed,
    CDPError,
    CDPMalformedMessage,
    CDPMessageTooLarge,
    CDPProtocolError,
    CDPRequestTooLarge,
    CDPTimeoutError,
)

__all__ = [
    "CDPBacklogExceeded",
    "CDPConnectError",
    "CDPConnectionClosed",
    "CDPError",
    "CDPMalformedMessage",
    "CDPMessageTooLarge",
    "CDPProtocolError",
    "CDPRequestTooLarge",
    "CDPTimeoutError",
]
