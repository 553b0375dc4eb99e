"""What optional features plug into the core: typed keys for the parts a
feature keeps on a crawler's runtime, and the Protocols of the parts the core
itself calls (the download handler asks for a request's profile context and
hands rendered requests with an expectation to the render ladder).

The core never imports a feature: the add-on (the composition root, above
every feature) registers each part's maker on the runtime
(:meth:`~scrapy_cdp_pool.core.runtime.CrawlerRuntime.provide`), and a feature
keeps its own per-crawler state under a key of its own
(:meth:`~scrapy_cdp_pool.core.runtime.CrawlerRuntime.part`). The import
contract in pyproject.toml checks the direction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
    from scrapy_cdp_pool.render import ContextOptions
    from scrapy_cdp_pool.settings.expectation import Expectation
    from scrapy_cdp_pool.settings.signed_out import SignedOutRule

T = TypeVar("T")


class PartKey(Generic[T]):
    """The key of one kind of per-crawler part (``T``: its type); ``name``
    names it in errors."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"PartKey({self.name!r})"


class ProfileContexts(Protocol):
    """The stored profiles, as the download handler uses them (implemented
    by :class:`~scrapy_cdp_pool.profiles.registry.ProfileRegistry`)."""

    def context_for(self, request: Request) -> ContextOptions | None:
        """The browser context ``request``'s profile needs, ``None`` without one."""

    def signed_out_rule(self, request: Request) -> SignedOutRule | None:
        """The signed-out rule of ``request``'s profile, if any."""

    async def save_state(self, request: Request, state: dict[str, Any]) -> None:
        """Write a render's storage state back to ``request``'s profile."""

    def unsupported(self, request: Request, error: Exception) -> Exception:
        """The error for a request whose profile no endpoint can honour."""


class RenderFetches(Protocol):
    """How the render ladder fetches on its rungs (implemented by the
    download handler): plain HTTP, or a render on a pool."""

    pool: ConnectionPool

    async def plain(self, request: Request, timeout_s: float) -> Response:
        """``request`` through the fallback handler, within ``timeout_s``."""

    async def render(self, request: Request, pool: ConnectionPool, timeout_s: float) -> Response:
        """``request`` rendered on ``pool`` within ``timeout_s`` seconds."""


class RenderLadder(Protocol):
    """The render ladder, as the download handler uses it (implemented by
    :class:`~scrapy_cdp_pool.ladder.climb.Ladder`)."""

    def expectation_for(self, request: Request) -> Expectation | None:
        """The expectation ``request`` is checked against; ``None``: render it
        without the ladder."""

    async def fetch(
        self,
        request: Request,
        expectation: Expectation,
        fetches: RenderFetches,
        timeout_s: float,
    ) -> Response:
        """The first response up the rungs that meets ``expectation``."""

    def hold(self) -> RenderLadder:
        """Taken by a download handler; :meth:`release` at its close."""

    async def release(self) -> None:
        """Given back by a download handler at its close."""


class BudgetView(Protocol):
    """A concurrency budget's figures, as telemetry reads them (implemented
    by :class:`~scrapy_cdp_pool.budget.budget.ConcurrencyBudget`)."""

    @property
    def current(self) -> int: ...
    @property
    def desired(self) -> int: ...
    @property
    def min(self) -> int: ...
    @property
    def max(self) -> int: ...
    @property
    def overloaded(self) -> tuple[str, ...]: ...


#: the crawl's stored profiles (registered by the add-on)
PROFILE_CONTEXTS: PartKey[ProfileContexts] = PartKey("profile contexts")
#: the crawl's render ladder (registered by the add-on)
RENDER_LADDER: PartKey[RenderLadder] = PartKey("render ladder")
