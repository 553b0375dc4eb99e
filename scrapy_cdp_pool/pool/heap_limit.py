"""The JavaScript heap ceiling of the browsers the plugin starts
(``CDP_POOL_PAGE_HEAP_LIMIT_MB``), and how a page that reached it is told
from other crashes.

- Lightpanda: ``--v8-max-heap-mb N`` (per browser instance, that is per CDP
  connection). A page that reaches it is stopped: the server logs
  ``"JS heap limit reached"`` and a ``"JS heap limit script"`` line with the
  page's URL on stderr, and closes that page's connection; the server and its
  other connections go on.
- Chromium: ``--js-flags=--max-old-space-size=N`` (per renderer). The page's
  renderer crashes (``Inspector.targetCrashed``); the browser and other pages
  go on. Chromium does not say why a renderer crashed, so every crash of a
  page on a capped embedded Chromium is reported as over the ceiling.

Remote endpoints (``CDP_POOL_ENDPOINTS``) are started by someone else: no
ceiling is set there, and their crashes stay :class:`PageCrashed`.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque

from scrapy_cdp_pool.backends import Backend
from scrapy_cdp_pool.config import PoolConfig

# Lightpanda 1.0.2: $level=error $msg="JS heap limit script" ... page_url=URL stack=...
_LIMIT_LINE = re.compile(rb"JS heap limit (?:reached|script).*?page_url=(\S+)")
_LIMIT_ANY = b"JS heap limit reached"

#: page URLs Lightpanda reported over the ceiling (most recent last)
_hits: deque[str] = deque(maxlen=64)
#: renders waiting for the next such line (futures of the running loop)
_waiters: set[asyncio.Future[None]] = set()


def heap_limit_args(config: PoolConfig, backend: Backend) -> list[str]:
    """The command-line arguments that cap a started ``backend`` server's
    JavaScript heap at ``config.page_heap_limit_mb`` MB
    (:meth:`Backend.heap_limit_args <scrapy_cdp_pool.backends.Backend.heap_limit_args>`);
    none when the setting is ``None`` or the user's own arguments
    (``CDP_POOL_LIGHTPANDA_ARGS`` / ``CDP_POOL_CHROMIUM_ARGS``) already set one."""
    limit = config.page_heap_limit_mb
    if limit is None:
        return []
    return backend.heap_limit_args(limit, backend.user_args(config))


def note_stderr_line(line: bytes) -> None:
    """Feed one line of a Lightpanda server's stderr."""
    if _LIMIT_ANY not in line and b"JS heap limit script" not in line:
        return
    match = _LIMIT_LINE.search(line)
    _hits.append(match.group(1).decode("utf-8", "replace") if match else "")
    for waiter in _waiters:
        if not waiter.done():
            waiter.set_result(None)


async def lightpanda_hit(urls: set[str], wait_s: float = 1.0) -> bool:
    """Whether Lightpanda reported one of ``urls`` over its heap ceiling,
    waiting up to ``wait_s`` seconds for the line (stderr and the closed
    WebSocket arrive in either order)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        if any(url in urls for url in _hits):
            return True
        left = deadline - loop.time()
        if left <= 0:
            return False
        waiter = loop.create_future()
        _waiters.add(waiter)
        try:
            async with asyncio.timeout(left):
                await waiter
        except TimeoutError:
            return any(url in urls for url in _hits)
        finally:
            _waiters.discard(waiter)
