"""One parsed page action as plain data (``meta["cdp_actions"]``'s items,
parsed by :func:`~scrapy_cdp_pool.render._actions.actions.parse_actions`): a
module of its own, imported by the request's spec and the action steps
without reaching the code that runs them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Action:
    """One parsed action: its name, positional and keyword arguments."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def describe(self) -> str:
        return f"{self.name}{list(self.args)!r}"
