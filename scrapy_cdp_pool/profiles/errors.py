"""Why a profile request failed without being scraped (each an
:class:`~scrapy.exceptions.IgnoreRequest`); kept importable here, they live in
:mod:`scrapy_cdp_pool.errors`."""

from __future__ import annotations

from scrapy_cdp_pool.errors import (
    ProfileError,
    ProfileFileError,
    ProfileRetired,
    ProfileSignedOut,
    ProfileUnsupported,
)

__all__ = [
    "ProfileError",
    "ProfileFileError",
    "ProfileRetired",
    "ProfileSignedOut",
    "ProfileUnsupported",
]
