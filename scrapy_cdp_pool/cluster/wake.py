"""WakeListener: a worker waiting for work is woken by what changes in Redis,
not by asking again.

A take that finds nothing to start leaves the worker idle until something
may have changed: a request it stores itself, a release it sends itself, a
parked gate coming due or a lease running out (the take says when), or a
token on the crawl's list ``<prefix>wake``. The scripts push one there
(:data:`~scrapy_cdp_pool.cluster.scripts.TAKE`, ``SETTLE``, ``PUSH``,
``UNLOCK_PROFILE``) when a step made a gate ready that was not (a profile or
host slot released with gates waiting for it, a request stored in a gate
that had none) and gates are still ready at its end. A take looks past the
request it takes for gates still open and pushes one only when it finds more
than its worker's free slots (its worker takes those itself, next): a token
popped for a gate that was closed woke a worker to a take that found nothing.
The list keeps at most 8.
A waiting worker pops tokens with ``BLPOP`` on a connection of its own, so
one token wakes one worker, not the fleet: the cost of a release does not
grow with the workers waiting. A worker that is not waiting (its slots
full, its budget used up) pops nothing.

With nothing popped for :data:`FALLBACK_S` the worker takes again all the
same (a feed item pushed by a user, a ``resume``, a token another worker
popped and did not need): an idle worker asks Redis once per
:data:`FALLBACK_S` for a token and once for a take (0.4 calls a second;
before, with 3 s: 0.7).

Redis unreachable: the listener tries again after a backoff; meanwhile the
scheduler takes again every :data:`FALLBACK_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisClusterException, RedisError

from scrapy_cdp_pool.cluster.redis_client import connect_async

logger = logging.getLogger(__name__)

FALLBACK_S = 5.0
"""Longest a waiting worker goes without a take, seconds."""
CLOSE_S = 1.0
"""Longest the close of the listener's connection is waited for at stop, seconds."""
RETRY_S = (0.5, 30.0)
"""Backoff of a lost connection: first wait, longest wait (seconds)."""


def wake_key(prefix: str) -> str:
    """The list of wake tokens the scripts push (see the module)."""
    return f"{prefix}wake"


class WakeListener:
    """While :meth:`waiting`, pops the crawl's wake tokens and calls
    ``on_change()`` for each, and when none came for :data:`FALLBACK_S`."""

    def __init__(
        self,
        url: str,
        prefix: str,
        on_change: Callable[[], None],
        *,
        fallback_s: float = FALLBACK_S,
    ) -> None:
        """``fallback_s``: how long a pop waits before ``on_change()`` is
        called all the same, seconds (a crawl of N buckets listens to each,
        N times :data:`FALLBACK_S`: its idle worker's calls stay those of one)."""
        self.url = url
        self.fallback_s = fallback_s
        self.key = wake_key(prefix)
        self.on_change = on_change
        #: the listener's connection answers (else the scheduler polls)
        self.connected = False
        self._waiting: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None
        self._stopping = False

    def start(self) -> bool:
        """Start listening in the running loop; ``False`` when none runs
        (the scheduler driven outside a crawl: it then polls)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self._waiting = asyncio.Event()
        self._task = loop.create_task(
            self._listen(self._waiting), name="cdp-pool cluster wake listener"
        )
        return True

    def waiting(self, waiting: bool) -> None:
        """The worker's last take found nothing (``True``), or it took one."""
        if self._waiting is None:
            return
        if waiting:
            self._waiting.set()
        else:
            self._waiting.clear()

    def stop(self) -> Awaitable[None] | None:
        """Stop listening; an awaitable done when the connection is closed
        (``None`` when the listener never ran)."""
        task, self._task = self._task, None
        self.connected = False
        if task is None:
            return None
        self._stopping = True
        if self._waiting is not None:
            self._waiting.set()  # out of its wait, to see it stops
        return self._finished(task)

    async def _finished(self, task: asyncio.Task[None]) -> None:
        """Wait for the listener to end: a pop under way is cut short by
        closing its connection (redis-py's client of one Redis shields a
        command from a cancel), else by a cancel (its Redis Cluster client
        leaves a pop running on a closed connection until its timeout: 30 s
        with 6 buckets, measured)."""
        done, _ = await asyncio.wait({task}, timeout=0.05)
        client = self._client
        if not done and client is not None:
            with contextlib.suppress(Exception):  # a close that hangs too: bounded
                await asyncio.wait_for(_disconnect(client), CLOSE_S)
            # its pop cut short, the listener closes its client and returns; a
            # cancel meeting it in that close left a connection unclosed (a
            # ResourceWarning at exit, 1 CI run in a loaded suite): it gets
            # CLOSE_S, which a quiet machine never waits out
            done, _ = await asyncio.wait({task}, timeout=CLOSE_S)
        if not done:
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=self.fallback_s + 5.0)
        if not done:  # cannot happen: the pop times out by then
            task.cancel()

    async def _listen(self, waiting: asyncio.Event) -> None:
        backoff_s = RETRY_S[0]
        while True:
            if self._stopping:
                return
            client: Any = None
            try:
                client = self._client = connect_async(self.url, self.fallback_s + 5.0)
                while True:
                    await waiting.wait()
                    if self._stopping:
                        return
                    self.connected = True
                    # the fallback take rides on the pop's timeout
                    popped = await client.blpop([self.key], timeout=self.fallback_s)
                    backoff_s = RETRY_S[0]
                    if self._stopping:
                        return
                    if popped is not None or waiting.is_set():
                        waiting.clear()  # set again by a take that finds nothing
                        self.on_change()
            except (RedisError, RedisClusterException, OSError) as e:
                self.connected = False
                logger.debug("Cluster wake list: %s; trying again", e)
            finally:
                self._client = None
                if client is not None:
                    # shielded: a cancel at stop does not cut the close short
                    closing = asyncio.ensure_future(client.aclose())
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await asyncio.shield(closing)
            await asyncio.sleep(backoff_s)
            backoff_s = min(RETRY_S[1], backoff_s * 2)


async def _disconnect(client: Any) -> None:
    """Close ``client``'s connections, those in use too."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None:  # one Redis
        await pool.disconnect(inuse_connections=True)
    else:  # a Redis Cluster's client
        await client.aclose()
