"""The render's and the pool's errors, kept importable here; they live in
:mod:`scrapy_cdp_pool.errors` (their translation into Scrapy's download
exceptions in :mod:`scrapy_cdp_pool.core.boundary`)."""

from __future__ import annotations

from scrapy_cdp_pool.errors import (
    ActionError,
    ActionUnsupported,
    CertificateRejected,
    DedicatedServerFailed,
    NavigationFailed,
    NavigationLoop,
    NavigationToOtherScheme,
    PageCrashed,
    PageMemoryExceeded,
    PageScriptError,
    PageScriptStalled,
    PoolStartTimeout,
    PoolUnavailable,
    RenderError,
    RequestTooLarge,
    ResponseTooLarge,
    SlotWaitTimeout,
)

__all__ = [
    "ActionError",
    "ActionUnsupported",
    "CertificateRejected",
    "DedicatedServerFailed",
    "NavigationFailed",
    "NavigationLoop",
    "NavigationToOtherScheme",
    "PageCrashed",
    "PageMemoryExceeded",
    "PageScriptError",
    "PageScriptStalled",
    "PoolStartTimeout",
    "PoolUnavailable",
    "RenderError",
    "RequestTooLarge",
    "ResponseTooLarge",
    "SlotWaitTimeout",
]
