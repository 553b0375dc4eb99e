"""A lean asyncio client of the Chrome DevTools Protocol: one WebSocket per
connection, flat sessions, events dispatched by session id."""

from scrapy_cdp_pool.cdp.client import CDPConnection, EventHandler
from scrapy_cdp_pool.cdp.errors import (
    CDPConnectError,
    CDPConnectionClosed,
    CDPError,
    CDPMessageTooLarge,
    CDPProtocolError,
    CDPTimeoutError,
)

__all__ = [
    "CDPConnectError",
    "CDPConnection",
    "CDPConnectionClosed",
    "CDPError",
    "CDPMessageTooLarge",
    "CDPProtocolError",
    "CDPTimeoutError",
    "EventHandler",
]
