"""One page session's CDP events, dispatched from one table.

A page registers, once, which handlers each event method goes to
(:meth:`EventRouter.on`), in the order they must run; a handler may take a
whole domain (``"Network.*"``). An event then costs one dictionary lookup: the
handlers of a method are resolved on its first event and kept. A handler that
returns ``True`` consumes the event: the handlers after it do not see it (a
navigation the render ignores, see
:mod:`~scrapy_cdp_pool.render._page.navigation_schemes`); any other return
value passes it on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

#: ``handler(method, params)``: ``True`` consumes the event
EventHandler = Callable[[str, dict[str, Any]], bool | None]


class EventRouter:
    """CDP event method -> its handlers, in registration order."""

    def __init__(self) -> None:
        self._routes: list[tuple[str, EventHandler]] = []
        self._resolved: dict[str, tuple[EventHandler, ...]] = {}

    def on(self, methods: str | Iterable[str], handler: EventHandler) -> None:
        """Send the events of ``methods`` (an exact method, ``"Domain.*"``
        for a whole domain, or several of either) to ``handler``, after the
        handlers registered before it."""
        for method in (methods,) if isinstance(methods, str) else methods:
            self._routes.append((method, handler))
        self._resolved.clear()

    def dispatch(self, method: str, params: dict[str, Any]) -> None:
        """Run the handlers of ``method`` in order, until one consumes it."""
        handlers = self._resolved.get(method)
        if handlers is None:
            handlers = self._resolve(method)
        for handler in handlers:
            if handler(method, params) is True:
                return

    def _resolve(self, method: str) -> tuple[EventHandler, ...]:
        domain = method.partition(".")[0] + ".*"
        handlers = tuple(h for m, h in self._routes if m == method or m == domain)
        self._resolved[method] = handlers
        return handlers
