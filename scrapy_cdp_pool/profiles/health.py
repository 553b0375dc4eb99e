"""Profile health over one crawl: usage, consecutive failures, retirement.

A profile is retired for the rest of the crawl when its consecutive failures
reach ``CDP_POOL_PROFILE_MAX_FAILURES``, when it is signed out and cannot sign
back in, or when no endpoint of the pool can honour it; its remaining requests
then fail at once with that reason. Stats go under ``cdp_pool/profile/<name>/``
(names and counts only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Statuses that say the site refuses the profile (a failure), as opposed to
#: a page that is missing or broken for everyone.
REFUSED_STATUSES = frozenset({401, 403, 407, 429})


@dataclass
class ProfileHealth:
    """One profile's record. ``retired`` is the reason, ``None`` while it is
    in service."""

    name: str
    consecutive_failures: int = 0
    retired: str | None = None


def stat_name(name: str) -> str:
    """``name`` as a stats path segment (a name that is not a valid profile
    name keeps only safe characters)."""
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)[:100] or "_"


class HealthBook:
    """Every profile's :class:`ProfileHealth`, with their stats."""

    def __init__(self, stats: Any, max_failures: int) -> None:
        self.stats = stats
        self.max_failures = max_failures
        self._records: dict[str, ProfileHealth] = {}

    def __getitem__(self, name: str) -> ProfileHealth:
        record = self._records.get(name)
        if record is None:
            record = self._records[name] = ProfileHealth(name)
        return record

    def inc(self, name: str, key: str, count: int = 1) -> None:
        self.stats.inc_value(f"cdp_pool/profile/{stat_name(name)}/{key}", count)

    def used(self, name: str) -> None:
        """A request of ``name`` goes to the browser."""
        self.inc(name, "requests")

    def succeeded(self, name: str) -> None:
        self[name].consecutive_failures = 0

    def failed(self, name: str, why: str) -> str | None:
        """A request of ``name`` failed (``why``: an exception type or a
        status). Returns the retirement reason when this failure retires it."""
        record = self[name]
        record.consecutive_failures += 1
        self.inc(name, "failures")
        if record.retired is None and record.consecutive_failures >= self.max_failures:
            return self.retire(
                name,
                f"retired after {record.consecutive_failures} consecutive failures "
                f"(CDP_POOL_PROFILE_MAX_FAILURES = {self.max_failures}; last: {why})",
            )
        return None

    def retire(self, name: str, reason: str) -> str:
        """Retire ``name`` for the crawl (the first reason stays)."""
        record = self[name]
        if record.retired is None:
            record.retired = reason
            self.stats.set_value(f"cdp_pool/profile/{stat_name(name)}/retired", 1)
            self.stats.inc_value("cdp_pool/profiles_retired")
        return record.retired

    def retired(self, name: str) -> str | None:
        record = self._records.get(name)
        return record.retired if record is not None else None
