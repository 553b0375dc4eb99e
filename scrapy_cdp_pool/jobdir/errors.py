"""The durable JOBDIR's errors, kept importable here; they live in
:mod:`scrapy_cdp_pool.errors`."""

from __future__ import annotations

from scrapy_cdp_pool.errors import (
    JobdirCorrupt,
    JobdirError,
)

__all__ = [
    "JobdirCorrupt",
    "JobdirError",
]
