"""A lean asyncio client of the Chrome DevTools Protocol: one WebSocket per
connection, flat sessions, events dispatched by session id."""

from scrapy_cdp_pool.browser.cdp.client import CDPConnection, EventHandler
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
    "CDPConnection",
    "CDPConnectionClosed",
    "CDPError",
    "CDPMalformedMessage",
    "CDPMessageTooLarge",
    "CDPProtocolError",
    "CDPRequestTooLarge",
    "CDPTimeoutError",
    "EventHandler",
]
