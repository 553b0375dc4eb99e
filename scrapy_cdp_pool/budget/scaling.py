"""The autoscaling rule and the budget's recorded states, as plain data and
pure functions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: ``desired`` moves by this share of itself per tick (at least 1 page).
STEP_RATIO = 0.05
#: The budget is "nearly used up" when the most pages in flight over the last
#: window reached this share of ``desired``.
NEARLY_USED_RATIO = 0.9


@dataclass(frozen=True)
class BudgetState:
    """The budget at one change: ``reason`` is ``"start"``, ``"tick"`` (an
    autoscaling tick, number ``tick``) or ``"limits"`` (``min``/``max``
    changed). ``current``: pages in flight; ``overloaded``: the signals the
    last tick found overloaded; ``crawlers``: attached crawlers."""

    reason: str
    tick: int
    current: int
    desired: int
    min: int
    max: int
    overloaded: tuple[str, ...]
    crawlers: int


def next_desired(desired: int, low: int, high: int, *, overloaded: bool, peak: int) -> int:
    """One step: down ~5% (at least 1, not below ``low``) when overloaded; up
    ~5% (not above ``high``) when not and ``peak`` pages in flight reached 90%
    of ``desired``; else unchanged."""
    step = max(1, math.ceil(desired * STEP_RATIO))
    if overloaded:
        return max(low, desired - step)
    if peak >= desired * NEARLY_USED_RATIO:
        return min(high, desired + step)
    return desired


def check_limits(low: Any, high: Any) -> None:
    """:raises ValueError: ``low`` is not an integer >= 1, or ``high`` one >= ``low``."""
    if isinstance(low, bool) or not isinstance(low, int) or low < 1:
        raise ValueError(f"min: {low!r} is not an integer >= 1")
    if isinstance(high, bool) or not isinstance(high, int) or high < low:
        raise ValueError(f"max: {high!r} is not an integer >= min ({low})")


def clamp(value: int, low: int, high: int) -> int:
    return min(max(value, low), high)
