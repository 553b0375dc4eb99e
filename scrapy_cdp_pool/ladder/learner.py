"""Which rung each kind of page starts on, learned from the requests seen.

Rules (one kind at a time; rungs are indices into the ladder, cheapest
first):

- A kind never seen starts on the lowest rung.
- A request that had to climb above the rung it began on (and above the
  kind's current start) moves the kind's start up to the rung that met it.
- A re-check begins one rung below the kind's start; when it is met there,
  the start moves down to it. A re-check that is not met changes nothing
  (the request climbs on, costing that one extra rung).
- Re-checks are chosen by a deterministic every-Nth rule, not at random:
  the k-th request (k = 1, 2, ...) of a kind whose start has a rung below it
  is a re-check when ``floor(k * fraction)`` grows, so exactly
  ``floor(n * fraction)`` of ``n`` such requests are re-checks
  (``fraction`` = 0.1: the 10th, 20th, ...), in any order of arrival.

The state is plain data (:class:`KindState`), saved through a
:class:`~scrapy_cdp_pool.ladder.store.LadderStore` when it changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass


@dataclass
class KindState:
    """One kind's learned start (a rung name) and how many of its requests
    had a rung below the start (the every-Nth counter)."""

    start: str
    counted: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


#: ``on_change(kind, old start or None, new start, why)``
ChangeHook = Callable[[str, str | None, str, str], None]


class Learner:
    """The starting rung per kind. ``rungs``: the ladder's rung names,
    cheapest first; ``fraction``: the re-check share, 0 to 1."""

    def __init__(
        self,
        rungs: tuple[str, ...],
        fraction: float,
        learned: dict[str, KindState] | None = None,
        on_change: ChangeHook | None = None,
    ) -> None:
        self.rungs = rungs
        self.fraction = fraction
        self.kinds: dict[str, KindState] = {}
        self.on_change = on_change
        for kind, state in (learned or {}).items():
            # a rung no longer on the ladder (e.g. CDP_POOL_FALLBACK turned
            # off since): the highest rung left
            start = state.start if state.start in rungs else rungs[-1]
            self.kinds[kind] = KindState(start, state.counted)

    def start_of(self, kind: str) -> int:
        """The index of the kind's starting rung (0 when never seen)."""
        state = self.kinds.get(kind)
        return self.rungs.index(state.start) if state is not None else 0

    def plan(self, kind: str, lowest: int = 0) -> tuple[int, bool]:
        """Where a request of ``kind`` begins, as ``(rung index, re-check)``.
        ``lowest``: the lowest rung this request may use (1 when plain HTTP
        cannot serve it)."""
        start = max(self.start_of(kind), lowest)
        state = self.kinds.get(kind)
        if state is None or start <= lowest or self.fraction <= 0:
            return start, False
        before = state.counted
        state.counted += 1
        recheck = math.floor(state.counted * self.fraction) > math.floor(before * self.fraction)
        return (start - 1, True) if recheck else (start, False)

    def record(self, kind: str, began: int, met: int | None, recheck: bool) -> bool:
        """Learn from one request that began on rung ``began`` and was met on
        ``met`` (``None``: on none). Returns whether the kind's start changed."""
        state = self.kinds.get(kind)
        if met is None:
            return False
        if state is None:
            self.kinds[kind] = KindState(self.rungs[met])
            self._changed(kind, None, met, "first request")
            return True
        current = self.start_of(kind)
        if recheck and met == began and met < current:
            state.start = self.rungs[met]
            self._changed(kind, current, met, "re-check met one rung lower")
            return True
        if met > began and met > current:
            state.start = self.rungs[met]
            self._changed(kind, current, met, f"not met below {self.rungs[met]}")
            return True
        return False

    def _changed(self, kind: str, old: int | None, new: int, why: str) -> None:
        if self.on_change is not None:
            before = self.rungs[old] if old is not None else None
            self.on_change(kind, before, self.rungs[new], why)

    def snapshot(self) -> dict[str, KindState]:
        return {kind: KindState(s.start, s.counted) for kind, s in self.kinds.items()}
