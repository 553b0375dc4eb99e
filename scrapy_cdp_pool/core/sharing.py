"""What crawlers of one process share under one ``CDP_POOL_NAME``: a pool (one
embedded server) and a concurrency budget.

The first crawler to ask makes the shared object, with its own settings; a
later crawler whose settings differ is refused with a :class:`ValueError`
naming both crawlers, the setting and both values. The object is released
when the last crawler using it lets go (a pool is then closed by its caller);
a name is free again once no live crawler uses it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from scrapy_cdp_pool.browser.pool.server_flags import start_settings
from scrapy_cdp_pool.settings.table import SHARED_POOL_SETTINGS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool

T = TypeVar("T")

#: ``(PoolConfig field, setting)``: what crawlers sharing a pool must agree on (the
#: settings table's ``shared`` column).
POOL_SETTINGS: tuple[tuple[str, str], ...] = SHARED_POOL_SETTINGS

Settings = tuple[tuple[str, Any], ...]
"""``((setting name, value), ...)``: what a shared object was made from."""


def crawler_name(crawler: Crawler) -> str:
    """The crawler's spider name, for messages."""
    return str(getattr(crawler.spidercls, "name", None) or crawler.spidercls.__name__)


@dataclass(eq=False)
class _Entry(Generic[T]):
    value: T
    settings: Settings
    owner: str  # the first crawler's spider name
    users: weakref.WeakSet[Crawler] = field(default_factory=weakref.WeakSet)


class SharedByName(Generic[T]):
    """Objects of one kind (``what``: ``"pool"``, ``"budget"``) shared by name."""

    def __init__(self, what: str, source: str, agree: str) -> None:
        self.what = what
        self._source = source  # "{owner}, {setting}, {theirs}": where the value came from
        self._agree = agree  # who must agree
        self._entries: dict[str, _Entry[T]] = {}

    def check(self, name: str | None, crawler: Crawler, settings: Settings) -> None:
        """Refuse ``crawler`` if the object shared under ``name`` was made from
        other ``settings`` (a crawler already using it is not checked again).

        :raises ValueError: naming both crawlers, the setting and both values.
        """
        entry = self._live(name)
        if entry is None or crawler in entry.users:
            return
        theirs = dict(entry.settings)
        for setting, value in settings:
            if theirs.get(setting) != value:
                raise ValueError(
                    f"CDP_POOL_NAME = {name!r}: crawler {crawler_name(crawler)!r} sets "
                    f"{setting} = {value!r}, but the shared {self.what} "
                    + self._source.format(
                        owner=entry.owner, setting=setting, theirs=theirs.get(setting)
                    )
                    + f"; {self._agree} must agree on it (allowed: {theirs.get(setting)!r}), "
                    "or use another CDP_POOL_NAME"
                )

    def join(self, name: str, crawler: Crawler, settings: Settings, make: Callable[[], T]) -> T:
        """The object shared under ``name``, made with ``make()`` for the first
        crawler.

        :raises ValueError: see :meth:`check`.
        """
        self.check(name, crawler, settings)
        entry = self._live(name)
        if entry is None:
            entry = self._entries[name] = _Entry(make(), settings, crawler_name(crawler))
        entry.users.add(crawler)
        return entry.value

    def leave(self, name: str, crawler: Crawler) -> bool:
        """``crawler`` is done with the object shared under ``name``; ``True``
        when it was the last user (the object is no longer shared)."""
        entry = self._entries.get(name)
        if entry is None:
            return True
        entry.users.discard(crawler)
        if entry.users:
            return False
        del self._entries[name]
        return True

    def _live(self, name: str | None) -> _Entry[T] | None:
        entry = self._entries.get(name) if name is not None else None
        if entry is not None and not entry.users:  # its crawlers are gone
            del self._entries[name]  # type: ignore[arg-type]
            return None
        return entry


def pool_settings(config: Any, fields: Iterable[tuple[str, str]] = POOL_SETTINGS) -> Settings:
    """The settings of ``config`` (a ``PoolConfig``) crawlers sharing a pool
    must agree on: the settings table's shared ones, then what its embedded
    server takes as flags when it starts
    (:func:`~scrapy_cdp_pool.browser.pool.server_flags.start_settings`)."""
    shared = tuple((setting, attrgetter(name)(config)) for name, setting in fields)
    return shared + tuple(start_settings(config))


#: pools shared under ``CDP_POOL_NAME``
POOLS: SharedByName[ConnectionPool] = SharedByName(
    "pool", "was made by crawler {owner!r} with {setting} = {theirs!r}", "crawlers sharing a pool"
)
