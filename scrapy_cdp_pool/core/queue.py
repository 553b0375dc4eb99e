"""ProfileAwarePriorityQueue: the scheduler priority queue that hands out the
best request whose gate is open.

Requests are kept in one :class:`~scrapy.pqueues.ScrapyPriorityQueue` per gate
key (profile and host), as Scrapy's ``DownloaderAwarePriorityQueue`` keeps one
per download slot, so memory and JOBDIR disk queues work the same way and a
request waiting for a busy profile never leaves its queue (nothing is parked in
memory, nothing is lost on a stop). :meth:`pop` skips keys whose gate is closed:
a busy profile holds back only its own requests, and no request waits while
holding a download slot.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.pqueues import QueueProtocol, ScrapyPriorityQueue

from scrapy_cdp_pool.core.gates import (
    INVALID_META_KEY,
    NOT_BEFORE_META_KEY,
    RequestGates,
    gate_key,
    not_before_problem,
)
from scrapy_cdp_pool.core.runtime import runtime_of

UNSERIALIZABLE_META_KEY = "_cdp_unserializable"
"""Set on a request the JOBDIR disk queue refused, with the serializer's error."""

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


def _path_safe(text: str) -> str:
    safe = re.sub(r"[^\w.-]", "_", text)[:40]
    return f"{safe}-{hashlib.md5(text.encode()).hexdigest()[:8]}"  # noqa: S324 - a name


class ProfileAwarePriorityQueue:
    """Install with ``SCHEDULER_PRIORITY_QUEUE`` (the add-on does).

    Among the gate keys whose gate is open, :meth:`pop` takes the request with
    the highest priority; ties go to the key served least recently, so
    profiles take turns.
    """

    @classmethod
    def from_crawler(
        cls,
        crawler: Crawler,
        downstream_queue_cls: type[QueueProtocol],
        key: str,
        startprios: dict[str, Iterable[int]] | None = None,
        *,
        start_queue_cls: type[QueueProtocol] | None = None,
    ) -> Self:
        return cls(crawler, downstream_queue_cls, key, startprios, start_queue_cls=start_queue_cls)

    def __init__(
        self,
        crawler: Crawler,
        downstream_queue_cls: type[QueueProtocol],
        key: str,
        startprios: dict[str, Iterable[int]] | None = None,
        *,
        start_queue_cls: type[QueueProtocol] | None = None,
    ) -> None:
        if startprios and not isinstance(startprios, dict):
            raise ValueError(
                "ProfileAwarePriorityQueue cannot resume a JOBDIR written by another "
                f"SCHEDULER_PRIORITY_QUEUE (state {type(startprios).__name__}); "
                "resume with the queue class the crawl started with"
            )
        self.crawler = crawler
        self.gates: RequestGates = runtime_of(crawler).gates
        self.downstream_queue_cls = downstream_queue_cls
        self.start_queue_cls = start_queue_cls
        self.key = key
        self.pqueues: dict[str, ScrapyPriorityQueue] = {}
        self._served: dict[str, int] = {}
        self._turn = itertools.count(1)
        for gate, prios in (startprios or {}).items():
            self.pqueues[gate] = self._pqfactory(gate, prios)

    def _pqfactory(self, gate: str, startprios: Iterable[int] = ()) -> ScrapyPriorityQueue:
        return ScrapyPriorityQueue(
            self.crawler,
            self.downstream_queue_cls,
            f"{self.key}/{_path_safe(gate)}" if self.key else "",
            startprios,
            start_queue_cls=self.start_queue_cls,
        )

    def push(self, request: Request) -> None:
        """Queue ``request`` under its gate key. A request whose
        ``meta["cdp_not_before"]`` is invalid is marked
        (:data:`~scrapy_cdp_pool.core.gates.INVALID_META_KEY`) and queued
        as if it had none, so it is handed out and fails by name.

        :raises ValueError: ``JOBDIR`` cannot store the request (marked too)."""
        problem = not_before_problem(request.meta.get(NOT_BEFORE_META_KEY), self.gates.max_wait_s)
        if problem is not None:
            request.meta[INVALID_META_KEY] = problem
        else:
            request.meta.pop(INVALID_META_KEY, None)
        gate = gate_key(request)
        queue = self.pqueues.get(gate)
        if queue is None:
            queue = self.pqueues[gate] = self._pqfactory(gate)
        try:
            queue.push(request)
        except ValueError as e:
            if self.key:  # JOBDIR: the scheduler keeps it in memory; fail it by name
                request.meta[UNSERIALIZABLE_META_KEY] = str(e)
            raise

    def _best(self) -> str | None:
        best: str | None = None
        best_rank: tuple[int, int] | None = None
        for gate, queue in self.pqueues.items():
            if queue.curprio is None or not self.gates.is_open(gate):
                continue
            rank = (queue.curprio, self._served.get(gate, 0))
            if best_rank is None or rank < best_rank:
                best, best_rank = gate, rank
        return best

    def pop(self) -> Request | None:
        gate = self._best()
        if gate is None or not self.gates.may_start():  # e.g. a used-up budget
            return None
        queue = self.pqueues[gate]
        request = queue.pop()
        self._served[gate] = next(self._turn)
        if len(queue) == 0:
            del self.pqueues[gate]
            self._served.pop(gate, None)
            queue.close()
            if self.key:
                with suppress(OSError):
                    Path(self.key, _path_safe(gate)).rmdir()
        if request is not None and not self.gates.on_dequeued(request):
            self.push(request)  # its profile was taken elsewhere meanwhile
            return None
        return request

    def peek(self) -> Request | None:
        gate = self._best()
        return self.pqueues[gate].peek() if gate is not None else None

    def close(self) -> dict[str, list[int]]:
        state = {gate: queue.close() for gate, queue in self.pqueues.items()}
        self.pqueues.clear()
        return state

    def __len__(self) -> int:
        return sum(len(queue) for queue in self.pqueues.values())

    @property
    def waiting(self) -> int:
        """Requests held back because their gate is closed (a busy profile,
        a paused host)."""
        return sum(
            len(queue) for gate, queue in self.pqueues.items() if not self.gates.is_open(gate)
        )


#: The queue's earlier name, still accepted in ``SCHEDULER_PRIORITY_QUEUE``
#: (settings written for releases before the code said "profile" throughout).
IdentityAwarePriorityQueue = ProfileAwarePriorityQueue
