"""Which identities have a request in flight.

The rule "one request in flight per identity" lives behind this small interface
so that a shared implementation (e.g. Redis, for several crawler processes) can
replace the in-process one without touching the queue.
"""

from __future__ import annotations

from typing import Protocol


class IdentityLocks(Protocol):
    """``try_acquire`` and ``release`` are keyed by identity name; ``token``
    says who holds it (a request fingerprint), so a late or repeated release
    by a former holder is ignored."""

    def try_acquire(self, identity: str, token: str) -> bool: ...

    def release(self, identity: str, token: str) -> bool: ...

    def is_busy(self, identity: str) -> bool: ...


class LocalIdentityLocks:
    """In-process :class:`IdentityLocks`: a dict of identity → token."""

    def __init__(self) -> None:
        self._holders: dict[str, str] = {}

    def try_acquire(self, identity: str, token: str) -> bool:
        holder = self._holders.get(identity)
        if holder is not None and holder != token:
            return False
        self._holders[identity] = token
        return True

    def release(self, identity: str, token: str) -> bool:
        if self._holders.get(identity) != token:
            return False
        del self._holders[identity]
        return True

    def is_busy(self, identity: str) -> bool:
        return identity in self._holders
