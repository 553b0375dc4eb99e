"""Where a request with requirements may go: which endpoints honour them, or
what a dedicated server must cover instead.

Requirements are capability names (see ``render/_request/context_options.py``);
``infos`` are the pool's endpoints as discovered (``None``: not answering).
"""

from __future__ import annotations

from collections.abc import Sequence

from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo
from scrapy_cdp_pool.browser.pool.server_options import SERVER_LEVEL, ServerOptions
from scrapy_cdp_pool.errors import CapabilityUnavailable


def check_capabilities(
    infos: Sequence[ServerInfo | None], requires: frozenset[str], *, dedicated_off: bool = False
) -> None:
    """Raise :class:`CapabilityUnavailable` unless a known endpoint has
    every capability in ``requires`` (nothing is raised before any is known).
    ``dedicated_off``: dedicated servers, which would cover a proxy or a time
    zone, are turned off (the message says so)."""
    if not requires:
        return
    known = [info for info in infos if info is not None]
    if known and not any(not (requires & info.unsupported) for info in known):
        missing = sorted(set().union(*(requires & info.unsupported for info in known)))
        hint = ""
        if dedicated_off and set(missing) <= SERVER_LEVEL:
            hint = "; CDP_POOL_DEDICATED_SERVERS = 0 turns off the dedicated servers that would"
        raise CapabilityUnavailable(
            f"no endpoint can honour {', '.join(missing)} "
            f"(endpoints: {', '.join(info.label for info in known)}){hint}"
        )


def dedicated_requires(
    infos: Sequence[ServerInfo | None],
    requires: frozenset[str],
    server_options: ServerOptions | None,
) -> frozenset[str] | None:
    """What is left of ``requires`` for a dedicated server started with
    ``server_options``, or ``None`` when the request stays on the endpoints:
    one of them honours ``requires``, or a dedicated server would not cover
    everything they miss."""
    if not requires or server_options is None:
        return None
    known = [info for info in infos if info is not None]
    if not known or any(not requires & info.unsupported for info in known):
        return None
    missing = frozenset().union(*(requires & info.unsupported for info in known))
    if not missing <= server_options.covers:
        return None
    return requires - server_options.covers
