"""InFlight: the requests the durable disk queues handed out, until the engine
is done with them.

A request is done when Scrapy's engine no longer holds it: its download, its
callback or errback, the requests that output scheduled and the items it
yielded through every item pipeline (``item_scraped`` sent), or the new request
a downloader middleware returned instead of a response, scheduled. Only then is
its row acknowledged, so everything it produced is stored (in the same database,
committed earlier) before it is forgotten.
"""

from __future__ import annotations

from collections.abc import Container

from scrapy import Request


class InFlight:
    def __init__(self) -> None:
        self._rows: dict[int, tuple[Request, int]] = {}

    def add(self, request: Request, row_id: int) -> None:
        self._rows[id(request)] = (request, row_id)

    def finished(self, in_progress: Container[Request]) -> list[int]:
        """Forget the requests that are not ``in_progress``; their row ids.

        Call it when the engine holds every request handed out so far: the
        engine starts a request's download right after the scheduler hands it
        out, in the same call.
        """
        done = [key for key, (request, _) in self._rows.items() if request not in in_progress]
        return [self._rows.pop(key)[1] for key in done]

    def __len__(self) -> int:
        return len(self._rows)
