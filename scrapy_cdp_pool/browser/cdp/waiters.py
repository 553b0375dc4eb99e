"""What waits for a CDP command's answer in
:class:`~scrapy_cdp_pool.browser.cdp.client.CDPConnection`:
a future (:meth:`~scrapy_cdp_pool.browser.cdp.client.CDPConnection.post`), or a handler
called at once from the reader (:meth:`~scrapy_cdp_pool.browser.cdp.client.CDPConnection.forward`,
for the live page's relay)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

AnswerHandler = Callable[[dict[str, Any] | None, BaseException | None], None]
"""Called as ``handler(result, error)`` with a :meth:`CDPConnection.forward`ed
command's answer: exactly one of the two is ``None``."""


class Relayed:
    """Stands for a future in the pending commands: the answer goes to its
    handler at once, from the reader."""

    __slots__ = ("_done", "on_answer")

    def __init__(self, on_answer: AnswerHandler) -> None:
        self.on_answer = on_answer
        self._done = False

    def done(self) -> bool:
        return self._done

    def set_result(self, result: dict[str, Any]) -> None:
        self._done = True
        self.on_answer(result, None)

    def set_exception(self, error: BaseException) -> None:
        self._done = True
        self.on_answer(None, error)


Waiter = asyncio.Future[dict[str, Any]] | Relayed
