"""Why a profile request failed without being scraped.

Each is an :class:`~scrapy.exceptions.IgnoreRequest`: the request's errback
gets it, Scrapy's retry middleware does not retry it, and the message says
why (never a cookie value, token or password), bounded by
:func:`~scrapy_cdp_pool.messages.cap_message`.
"""

from __future__ import annotations

from pathlib import Path

from scrapy.exceptions import IgnoreRequest

from scrapy_cdp_pool.messages import cap_message


class ProfileError(IgnoreRequest):
    """A request of profile ``name`` cannot be sent as that identity."""

    def __init__(self, name: str, reason: str) -> None:
        reason = cap_message(reason)  # may carry a sign-in hook's error
        super().__init__(cap_message(f"profile {name!r}: {reason}"))
        self.name = name
        self.reason = reason


class ProfileFileError(ProfileError):
    """A profile file is missing or invalid; ``path`` and ``problem`` say which
    and what."""

    def __init__(self, name: str, path: Path, problem: str) -> None:
        super().__init__(name, f"{path}: {problem}")
        self.path = path
        self.problem = problem


class ProfileSignedOut(ProfileError):
    """The site shows the identity signed out and it could not sign back in."""


class ProfileRetired(ProfileError):
    """The identity was retired for this crawl (too many failures, signed
    out, or no endpoint can honour it); ``reason`` says which."""


class ProfileUnsupported(ProfileError):
    """No endpoint of the pool can honour what the profile asks for."""
