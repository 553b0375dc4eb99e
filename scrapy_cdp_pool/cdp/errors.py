"""Errors raised by the CDP client.

They stay CDP-level on purpose: :mod:`scrapy_cdp_pool.render.errors` is the one
place that turns them into Scrapy download exceptions.
"""

from __future__ import annotations

from scrapy_cdp_pool.messages import cap_message


class CDPError(Exception):
    """Base class of every error raised by :mod:`scrapy_cdp_pool.cdp`; the
    message (a server's words, of any size) is cut to
    :data:`~scrapy_cdp_pool.messages.MESSAGE_LIMIT_CHARS` characters."""

    def __init__(self, message: object = "") -> None:
        super().__init__(cap_message(message))


class CDPProtocolError(CDPError):
    """The server answered a command with an ``error`` object.

    ``method`` is the CDP method (``"Page.navigate"``), ``code`` and
    ``message`` are the server's own.
    """

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method} failed: {message} (code {code})")
        self.method = method
        self.code = code
        self.message = cap_message(message)


class CDPConnectionClosed(CDPError):
    """The WebSocket closed (server killed, socket dropped, connection retired)
    while a command was waiting for its answer, or before it was sent."""


class CDPRequestTooLarge(CDPConnectionClosed):
    """The connection closed while a command larger than
    :data:`~scrapy_cdp_pool.cdp.client.LARGE_MESSAGE` bytes waited for its
    answer: most likely the server refused it as too large (Lightpanda closes
    a connection whose message passes its ``--cdp-max-message-size``).
    ``size`` is the message's size in bytes."""

    def __init__(self, method: str, size: int, reason: str) -> None:
        super().__init__(
            f"{method}: the endpoint closed the connection ({reason}) while a {size}-byte "
            "message waited for its answer: most likely larger than it takes (Lightpanda's "
            "--cdp-max-message-size, 1 MiB by default; CDP_POOL_MAX_MESSAGE_MB sets it on "
            "the embedded servers)"
        )
        self.method = method
        self.size = size


class CDPConnectError(CDPError):
    """The WebSocket could not be opened: refused, unreachable, or the server
    answered the upgrade with an HTTP error such as Lightpanda's 503 when it
    already serves ``--cdp-max-connections`` clients."""


class CDPTimeoutError(CDPError):
    """A command got no answer within its timeout (seconds)."""

    def __init__(self, method: str, timeout_s: float) -> None:
        super().__init__(f"{method} got no answer within {timeout_s:.1f} s")
        self.method = method
        self.timeout_s = timeout_s


class CDPMessageTooLarge(CDPConnectionClosed):
    """The server sent (or announced) a message larger than the client's cap,
    ``limit_bytes`` (``CDP_POOL_MAX_MESSAGE_MB``); the connection was closed
    before the message was held in memory in full."""

    def __init__(self, message: str, *, limit_bytes: int) -> None:
        super().__init__(message)
        self.limit_bytes = limit_bytes


class CDPMalformedMessage(CDPConnectionClosed):
    """The server sent a message that is not a CDP message (not JSON, not a
    JSON object, or fields of the wrong types); the connection was closed."""


class CDPBacklogExceeded(CDPConnectionClosed):
    """More commands than the client allows waited for an answer at once on
    one connection (each event the browser pauses on takes one): a server
    that floods events and answers none; the connection was closed."""
