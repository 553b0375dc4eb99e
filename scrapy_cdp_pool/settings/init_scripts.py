"""Init scripts: JavaScript run in every new document of a page before the
page's own scripts (``Page.addScriptToEvaluateOnNewDocument``, as Playwright's
``add_init_script``).

``CDP_POOL_INIT_SCRIPTS`` (every rendered request) and
``meta["cdp_init_scripts"]`` (one request, after the setting's) are lists
whose items are either JavaScript source or a path to a ``.js`` file: an item
is a path when it is a :class:`os.PathLike`, or a one-line string ending in
``.js``; anything else is source. The setting's files are read once at start
(a file that cannot be read is refused there, by name); a request's files when
the request is rendered (a file that cannot be read fails that request, by
name).

Both backends honour the command, sent before the navigation (tested on
the main document; Lightpanda loads no iframe unless started with
``--load-resources iframe``). A page that ran init scripts is not reused
(``CDP_POOL_REUSE_PAGES``): the browser would run them for the next request too.
"""

from __future__ import annotations

import os
from typing import Any


def is_path(item: Any) -> bool:
    """Whether a list item names a file rather than holding source."""
    if isinstance(item, os.PathLike):
        return True
    return isinstance(item, str) and "\n" not in item and item.strip().endswith(".js")


def load_scripts(raw: Any, where: str) -> tuple[str, ...]:
    """The sources of ``raw`` (``None``, or a list of sources and paths), files
    read as UTF-8.

    :raises ValueError: not a list of strings or paths, or a file that cannot
        be read (``where`` names the setting or meta key at fault).
    """
    if raw is None or raw == "" or raw == []:
        return ()
    if isinstance(raw, (str, os.PathLike)):
        raw = [raw]
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"{where}: {raw!r} is not a list of JavaScript sources or .js paths")
    sources: list[str] = []
    for item in raw:
        if is_path(item):
            path = os.fspath(item)
            try:
                with open(path, encoding="utf-8") as f:
                    sources.append(f.read())
            except (OSError, UnicodeDecodeError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                raise ValueError(
                    f"{where}: the script file {path!r} cannot be read ({reason})"
                ) from e
        elif isinstance(item, str) and item.strip():
            sources.append(item)
        else:
            raise ValueError(
                f"{where}: {item!r} is not JavaScript source or a .js path (a non-empty string)"
            )
    return tuple(sources)
