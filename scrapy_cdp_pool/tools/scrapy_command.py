"""``scrapy cdp-pool``: the plugin's version, whether the project enables its
add-on, and its ``CDP_POOL_*`` settings' values parsed and checked as a crawl
parses them (paths, browser binaries and the reactor are checked when a crawl
starts, not here: checking them makes directories and starts nothing).

Registered as a ``scrapy.commands`` entry point (pyproject.toml), which Scrapy's
command line imports on every ``scrapy`` command: importing this module is
what connects the warning about ``CDP_POOL_*`` settings set without the
add-on (:mod:`scrapy_cdp_pool.settings.without_addon`) for ``scrapy crawl``
and ``scrapy runspider``. So it imports little: the checks run in
:meth:`Command.run`.

Exit status: 0, or 1 when a setting is refused (the line names it) or when
``CDP_POOL_*`` settings are set but the add-on is not enabled (they would do
nothing).
"""

from __future__ import annotations

import argparse
from importlib import metadata
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand

from scrapy_cdp_pool.settings import without_addon  # connects the warning's receiver

DISTRIBUTION = "scrapy-cdp-pool"
NOT_CHECKED_HERE = (
    "paths, browser binaries and the reactor are checked when a crawl starts, not here"
)
"""Said after "valid": a check that makes directories or starts a browser is
not run by this command (before, "valid" read as if those had passed)."""


class Command(ScrapyCommand):
    """``scrapy cdp-pool``: prints three lines (version, add-on, settings:
    what is parsed and what is left to a crawl's start)."""

    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return ""

    def short_desc(self) -> str:
        return "Check scrapy-cdp-pool: its version, the add-on, the CDP_POOL_* settings"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # imported here: Scrapy imports this module on every `scrapy` command
        from scrapy_cdp_pool.settings.config import PoolConfig

        settings = self.settings
        if settings is None:  # Scrapy's command line sets it before run()
            raise RuntimeError("scrapy cdp-pool runs from Scrapy's command line")
        print(f"{DISTRIBUTION} {_version()}")
        addons = settings.getdict("ADDONS")
        enabled = any(_names_addon(key) for key in addons)
        if enabled:
            print("add-on: enabled (ADDONS)")
        else:
            print(f"add-on: not enabled; add to the project's settings: {without_addon.ADDON_LINE}")
        named = sorted(
            name for name in settings if isinstance(name, str) and name.startswith("CDP_POOL_")
        )
        try:
            PoolConfig.from_settings(settings)
        except ValueError as e:
            print(f"settings: refused: {e}")
            self.exitcode = 1
            return
        print(
            f"settings: valid as parsed ({', '.join(named) or 'no CDP_POOL_* setting set'}); "
            f"{NOT_CHECKED_HERE}"
        )
        if named and not enabled:
            self.exitcode = 1  # set, but nothing would read them


def _names_addon(key: Any) -> bool:
    if isinstance(key, str):
        return key.startswith("scrapy_cdp_pool.")
    return f"{getattr(key, '__module__', '')}.".startswith("scrapy_cdp_pool.")


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "(not installed)"
