"""Backoff delays and ``Retry-After`` values: pure functions, times in seconds."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def backoff_delay(
    attempt: int, base_s: float, max_s: float, rng: random.Random | None = None
) -> float:
    """Delay before retry number ``attempt`` (1 for the first retry):
    ``base_s * 2 ** (attempt - 1)`` capped at ``max_s``, with "equal jitter"
    (a uniform draw from the upper half), so retries of many requests spread
    out while each still waits at least half its step."""
    step = min(max_s, base_s * 2.0 ** max(0, attempt - 1))
    draw = (rng or _rng).random()
    return step / 2 + step / 2 * draw


def pause_delay(strikes: int, base_s: float, max_s: float) -> float:
    """Host pause after ``strikes`` consecutive 429s that named no
    ``Retry-After``: ``base_s * 2 ** (strikes - 1)`` capped at ``max_s``."""
    return min(max_s, base_s * 2.0 ** max(0, strikes - 1))


def parse_retry_after(value: str | bytes | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value: delta-seconds or
    an HTTP-date (RFC 9110). ``None`` when absent or unreadable; a date in the
    past gives ``0.0``."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC by RFC 5322
        when = when.replace(tzinfo=UTC)
    # Wall clock on purpose: the header names a wall-clock instant.
    seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds)


_rng = random.Random()  # noqa: S311 - jitter, not security
