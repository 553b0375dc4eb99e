"""Which profiles have a request in flight.

The rule "one request in flight per profile" lives behind this small interface
so that a shared implementation (e.g. Redis, for several crawler processes) can
replace the in-process one without touching the queue.
"""

from __future__ import annotations

from typing import Protocol


class ProfileLocks(Protocol):
    """``try_acquire`` and ``release`` are keyed by profile name; ``token``
    says who holds it (a request fingerprint), so a late or repeated release
    by a former holder is ignored."""

    def try_acquire(self, profile: str, token: str) -> bool: ...

    def release(self, profile: str, token: str) -> bool: ...

    def is_busy(self, profile: str) -> bool: ...


class LocalProfileLocks:
    """In-process :class:`ProfileLocks`: a dict of profile → token."""

    def __init__(self) -> None:
        self._holders: dict[str, str] = {}

    def try_acquire(self, profile: str, token: str) -> bool:
        holder = self._holders.get(profile)
        if holder is not None and holder != token:
            return False
        self._holders[profile] = token
        return True

    def release(self, profile: str, token: str) -> bool:
        if self._holders.get(profile) != token:
            return False
        del self._holders[profile]
        return True

    def is_busy(self, profile: str) -> bool:
        return profile in self._holders
