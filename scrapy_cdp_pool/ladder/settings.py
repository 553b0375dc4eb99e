"""The ladder's settings, read and validated once (each error names the
setting, the value and what is allowed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scrapy.settings import BaseSettings

from scrapy_cdp_pool.ladder.expectation import Expectation, parse_expectation

#: ``CDP_POOL_RENDER``: "browser" (today's: a rendered request goes to the
#: browser), "auto" (plain HTTP first, then up the ladder)
RENDER_MODES = ("browser", "auto")
#: ``CDP_POOL_FALLBACK``: the fuller browser a failed or incomplete render is
#: done again on (``None``: none)
FALLBACKS = ("chromium",)
DEFAULT_RECHECK_FRACTION = 0.1


@dataclass(frozen=True)
class LadderConfig:
    """``render``: one of :data:`RENDER_MODES`; ``fallback``: ``"chromium"``
    or ``None``; ``expect``: the spider's default expectation
    (``CDP_POOL_EXPECT``, ``None``: none); ``recheck_fraction``: the share of
    a kind's requests re-checked one rung below its learned start, 0 to 1;
    ``store``: the import path of a :class:`~scrapy_cdp_pool.ladder.store.LadderStore`
    (``None``: the JOBDIR's, when there is one)."""

    render: str = "browser"
    fallback: str | None = None
    expect: Expectation | None = None
    recheck_fraction: float = DEFAULT_RECHECK_FRACTION
    store: str | None = None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> LadderConfig:
        """:raises ValueError: naming the setting, the value and what is allowed."""
        render = settings.get("CDP_POOL_RENDER") or "browser"
        if render not in RENDER_MODES:
            raise ValueError(
                f"CDP_POOL_RENDER: {render!r} is not a render mode; "
                f"allowed: {', '.join(map(repr, RENDER_MODES))}"
            )
        fallback = settings.get("CDP_POOL_FALLBACK") or None
        if fallback is not None and fallback not in FALLBACKS:
            raise ValueError(
                f"CDP_POOL_FALLBACK: {fallback!r} is not a fallback browser; "
                f"allowed: {', '.join(map(repr, FALLBACKS))} or None"
            )
        if (
            fallback == "chromium"
            and not settings.get("CDP_POOL_ENDPOINTS")
            and settings.get("CDP_POOL_BROWSER") == "chromium"
        ):
            raise ValueError(
                "CDP_POOL_FALLBACK: 'chromium' with CDP_POOL_BROWSER = 'chromium': the pool "
                "renders on Chromium already; allowed: None, or CDP_POOL_BROWSER = 'lightpanda'"
            )
        raw_expect = settings.get("CDP_POOL_EXPECT")
        expect = None if raw_expect in (None, "", []) else parse_expectation(
            raw_expect, "CDP_POOL_EXPECT"
        )  # fmt: skip
        fraction = _fraction(settings.get("CDP_POOL_RECHECK_FRACTION"))
        store = settings.get("CDP_POOL_LADDER_STORE") or None
        if store is not None and not isinstance(store, str):
            raise ValueError(
                f"CDP_POOL_LADDER_STORE: {store!r} is not the import path of a ladder store "
                "class; allowed: 'package.module.Class' or None"
            )
        return cls(
            render=render,
            fallback=fallback,
            expect=expect,
            recheck_fraction=fraction,
            store=store,
        )


def _fraction(value: Any) -> float:
    if value is None:
        return DEFAULT_RECHECK_FRACTION
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if isinstance(value, bool) or not 0.0 <= number <= 1.0:
        raise ValueError(
            f"CDP_POOL_RECHECK_FRACTION: {value!r} is not a share of requests; "
            "allowed: a number from 0 to 1 (0.1: one request in ten)"
        )
    return number
