"""Addon: the one line a user adds, ``ADDONS = {"scrapy_cdp_pool.Addon": 0}``."""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings

HANDLER = "scrapy_cdp_pool.handler.CDPDownloadHandler"
ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"


class Addon:
    """Installs :class:`~scrapy_cdp_pool.CDPDownloadHandler` for ``http`` and
    ``https`` and keeps the handlers that were there before as the fallback for
    requests that are not rendered (``CDP_POOL_FALLBACK_HANDLERS``).

    :raises ValueError: ``TWISTED_REACTOR`` is not the asyncio reactor, which
        the pool needs (it runs on the asyncio event loop).
    """

    def update_settings(self, settings: BaseSettings) -> None:
        reactor = settings.get("TWISTED_REACTOR")
        if reactor != ASYNCIO_REACTOR:
            raise ValueError(
                f"scrapy_cdp_pool needs TWISTED_REACTOR = {ASYNCIO_REACTOR!r} "
                f"(Scrapy's default); it is set to {reactor!r}"
            )
        handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
        fallbacks: dict[str, Any] = {}
        for scheme in ("http", "https"):
            previous = handlers.get(scheme)
            if previous is not None and _path(previous) != HANDLER:
                fallbacks[scheme] = previous
        settings.set("CDP_POOL_FALLBACK_HANDLERS", fallbacks, "addon")
        download_handlers = settings["DOWNLOAD_HANDLERS"]
        if isinstance(download_handlers, BaseSettings):
            download_handlers.set("http", HANDLER, "addon")
            download_handlers.set("https", HANDLER, "addon")
        else:
            settings.set(
                "DOWNLOAD_HANDLERS",
                {**(download_handlers or {}), "http": HANDLER, "https": HANDLER},
                "addon",
            )


def _path(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    return f"{obj.__module__}.{obj.__qualname__}"
