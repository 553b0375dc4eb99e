"""Console messages and uncaught exceptions of a page (``meta["cdp_console"]``).

With ``meta["cdp_console"] = True`` the page's ``Runtime`` domain is enabled
and its ``Runtime.consoleAPICalled`` and ``Runtime.exceptionThrown`` events are
kept, in order, as plain dicts in ``response.meta["cdp_console_messages"]`` (a
key of its own, so the request's flag stays as it was for a retry or a
redirect's next hop); when the render fails, in the failed request's meta
under the same key (an errback's ``failure.request.meta``), and in the
failures file's and failure snapshot's lines as ``console``::

    {"type": "log" | "info" | "warning" | "error" | "debug" | ... | "exception",
     "text": str, "timing": seconds since the page was opened}

A console call's text is its arguments joined by spaces (a string as is, a
number or boolean as JavaScript prints it, an object by its description,
e.g. ``Object``); an exception's is its description (message and stack as the
browser gives it). Each text is cut to :data:`MESSAGE_LIMIT_CHARS` with
:func:`~scrapy_cdp_pool.messages.cap_message`; at most :data:`MAX_MESSAGES`
are kept per request, and a last ``{"type": "truncated", ...}`` entry says how
many more came.
"""

from __future__ import annotations

import time
from typing import Any

from scrapy_cdp_pool.messages import cap_message

#: the meta key the messages are handed over in (the response's, or the
#: failed request's when the render failed)
CONSOLE_MESSAGES_META_KEY = "cdp_console_messages"
#: most messages kept per request (a page logging in a loop cannot fill memory)
MAX_MESSAGES = 100
#: longest text kept per message, in characters (the marker included)
MESSAGE_LIMIT_CHARS = 2000


def parse_console(raw: Any) -> bool:
    """``meta["cdp_console"]``: ``True``, ``False`` or unset.

    :raises ValueError: any other value.
    """
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise ValueError(f"{raw!r}; expected True or False")
    return raw


class ConsoleLog:
    """Keeps one page's console messages and exceptions from its events."""

    def __init__(self, started_at: float) -> None:
        self.started_at = started_at
        self.entries: list[dict[str, Any]] = []
        self.dropped = 0

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.consoleAPICalled":
            kind = str(params.get("type", "log"))
            text = " ".join(_arg_text(arg) for arg in params.get("args") or ())
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails") or {}
            exception = details.get("exception") or {}
            kind = "exception"
            text = str(exception.get("description") or details.get("text") or "exception")
        else:
            return
        if len(self.entries) >= MAX_MESSAGES:
            self.dropped += 1
            return
        self.entries.append(
            {
                "type": kind,
                "text": cap_message(text, MESSAGE_LIMIT_CHARS),
                "timing": round(time.monotonic() - self.started_at, 6),
            }
        )

    def messages(self) -> list[dict[str, Any]]:
        """The kept entries, with a last ``truncated`` entry if some were not."""
        if not self.dropped:
            return list(self.entries)
        note = f"{self.dropped} more messages not kept (at most {MAX_MESSAGES} per request)"
        return [*self.entries, {"type": "truncated", "text": note, "timing": None}]


def _arg_text(arg: dict[str, Any]) -> str:
    """A console argument (a CDP ``Runtime.RemoteObject``) as text."""
    if "value" in arg:
        value = arg["value"]
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "null"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)
    if "unserializableValue" in arg:
        return str(arg["unserializableValue"])
    if arg.get("type") == "undefined":
        return "undefined"
    return str(arg.get("description") or arg.get("className") or arg.get("type") or "")
