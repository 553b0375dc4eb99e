"""HostEvents: the fleet's host pauses and navigation answers, pushed to each
worker (Redis pub/sub) instead of asked for before each request.

- **Pauses.** :data:`~scrapy_cdp_pool.cluster.scripts.PAUSE_HOST` publishes
  ``<ms left>|<host>`` on ``<prefix>hosts`` in the step that writes the
  pause, and indexes it in ``<prefix>pauses`` (host -> its end, Redis's
  clock). The worker subscribes, then reads that index (so no pause falls
  between the two), and from then on answers :meth:`HostEvents.pause_left`
  from memory after reading, without waiting, every message already on its
  subscription's socket: a check of a host already known paused costs no
  round trip. A host not known paused is still asked of Redis (``PTTL``,
  ``ClusterHostPauseMiddleware.remaining`` in
  :mod:`~scrapy_cdp_pool.cluster.host_pause`): Redis
  may write a pause's message to the subscribers after it answered the
  worker that wrote it, so a check begun after that answer could miss it.
  While the subscription is not live (starting, lost, Redis unreachable)
  :meth:`~HostEvents.pause_left` says ``None`` and the caller asks Redis
  (tried again after :data:`RETRY_S`).
- **Navigation answers** (``CDP_POOL_HOST_RATE``):
  :data:`~scrapy_cdp_pool.cluster.scripts.ANSWER_NAVIGATION` publishes on
  ``<prefix>answered:<host>``; a start waiting for another worker's answer
  subscribes to its host's channel (once per host) and sleeps until the
  answer comes (the subscription's socket readable in the event loop) or the
  claim runs out (:meth:`~HostEvents.wait_answer`), instead of asking again
  every 50 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from redis.exceptions import RedisClusterException, RedisError

from scrapy_cdp_pool.cluster.redis_client import CALL_TIMEOUT_S, connect

logger = logging.getLogger(__name__)

RETRY_S = (0.5, 30.0)
"""Backoff of a lost subscription: first wait, longest (seconds)."""
MAX_HOST_CHANNELS = 10_000
"""Most hosts' answer channels one worker stays subscribed to (past it, all
are dropped and subscribed again as starts wait)."""
_DRAIN = 10_000
"""Most messages read in one go (a check never loops for ever)."""
_ERRORS = (RedisError, RedisClusterException, OSError, RuntimeError)

READ_PAUSES = r"""
-- KEYS: pauses; the hosts paused now: {now ms, host, end ms, ...}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local found = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES')
table.insert(found, 1, now)
return found
"""


def pauses_channel(prefix: str) -> str:
    return f"{prefix}hosts"


def answer_channel(prefix: str, host: str) -> str:
    return f"{prefix}answered:{host}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class HostEvents:
    """See the module. Subscribes at the first :meth:`pause_left`."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        #: subscribed, and the pauses in place read: :meth:`pause_left` answers
        self.live = False
        self._pauses: dict[str, float] = {}  # host -> end (monotonic s)
        self._answers: dict[str, asyncio.Event] = {}
        #: answer messages read per host (of :attr:`_answers`' hosts): a wait
        #: returns at once for one read after its claim was refused
        self._answers_read: dict[str, int] = {}
        self._client: Any = None
        self._pubsub: Any = None
        self._reader: tuple[asyncio.AbstractEventLoop, int] | None = None
        self._retry_at = 0.0
        self._backoff_s = RETRY_S[0]
        self._stopped = False

    def pause_left(self, host: str) -> float | None:
        """Seconds left of ``host``'s fleet-wide pause (0.0: none); ``None``
        when the subscription is not live (ask Redis)."""
        if not self._ensure() or not self._drain():
            return None
        end = self._pauses.get(host)
        if end is None:
            return 0.0
        left = end - time.monotonic()
        if left <= 0:
            del self._pauses[host]
            return 0.0
        return left

    def answers_read(self, host: str) -> int:
        """How many answer messages of ``host`` were read so far: taken
        before a claim is asked, it is the ``read_before`` of the
        :meth:`wait_answer` that follows a refused claim."""
        return self._answers_read.get(host, 0)

    async def wait_answer(self, host: str, timeout_s: float, read_before: int = 0) -> None:
        """Sleep until the answer of ``host``'s last claimed navigation comes
        (its message), at most ``timeout_s``. Returns at once the first time
        for a host (its channel is subscribed then: the answer may have come
        before), when the subscription is not live, and when an answer
        message was read since :meth:`answers_read` said ``read_before``
        (one written while the claim was refused: read here, before the wait,
        it once left the waiter asleep for the rest of the lease, 30 s, in
        test runs of two workers at a host rate)."""
        if not self._ensure() or not self._drain():
            return
        event = self._answers.get(host)
        if event is None:
            try:
                if len(self._answers) >= MAX_HOST_CHANNELS:
                    channels = [answer_channel(self.prefix, h) for h in self._answers]
                    self._pubsub.unsubscribe(*channels)
                    self._answers.clear()
                    self._answers_read.clear()
                self._pubsub.subscribe(answer_channel(self.prefix, host))
            except _ERRORS as e:
                self._lost(e)
                return
            self._answers[host] = asyncio.Event()
            self._watch()
            return
        if self._answers_read.get(host, 0) > read_before:
            return  # its answer came since the claim was asked
        event.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout_s)

    def stop(self) -> None:
        self._stopped = True
        self._close()

    # -- the subscription -------------------------------------------------

    def _ensure(self) -> bool:
        if self.live:
            return True
        if self._stopped or time.monotonic() < self._retry_at:
            return False
        try:
            self._client = connect(self.url, CALL_TIMEOUT_S)
            self._pubsub = self._client.pubsub()
            self._pubsub.subscribe(pauses_channel(self.prefix))
            found = self._client.eval(READ_PAUSES, 1, f"{self.prefix}pauses")
        except _ERRORS as e:
            self._lost(e)
            return False
        now_ms, at = int(found[0]), time.monotonic()
        self._pauses = {
            _text(found[i]): at + (float(found[i + 1]) - now_ms) / 1000
            for i in range(1, len(found), 2)
        }
        self.live = True
        self._backoff_s = RETRY_S[0]
        return True

    def _drain(self) -> bool:
        """Read every message already on the subscription's socket, without
        waiting; ``False`` when the subscription was lost."""
        try:
            connection = self._pubsub.connection
            for _ in range(_DRAIN):
                if connection is None or not connection.can_read(timeout=0):
                    break
                message = self._pubsub.get_message(ignore_subscribe_messages=True, timeout=0.0)
                if message is not None:
                    self._on_message(message)
        except _ERRORS as e:
            self._lost(e)
            return False
        return True

    def _watch(self) -> None:
        """Read messages as they come while starts wait for answers (the
        subscription's socket watched by the running event loop)."""
        if self._reader is not None:
            return
        try:
            loop = asyncio.get_running_loop()
            fd = self._pubsub.connection._sock.fileno()
            loop.add_reader(fd, self._drain)
        except (RuntimeError, AttributeError, NotImplementedError, OSError, ValueError):
            return  # no loop or no socket to watch: waits run out at their time
        self._reader = (loop, fd)

    def _on_message(self, message: dict[str, Any]) -> None:
        channel, data = _text(message["channel"]), _text(message["data"])
        if channel == pauses_channel(self.prefix):
            ms, _, host = data.partition("|")
            end = time.monotonic() + int(ms) / 1000
            self._pauses[host] = max(end, self._pauses.get(host, 0.0))
            return
        host = channel[len(answer_channel(self.prefix, "")) :]
        event = self._answers.get(host)
        if event is not None:
            self._answers_read[host] = self._answers_read.get(host, 0) + 1
            event.set()

    def _lost(self, error: BaseException) -> None:
        logger.debug("Cluster host events: %s; asking Redis meanwhile", error)
        self._close()
        self._retry_at = time.monotonic() + self._backoff_s
        self._backoff_s = min(RETRY_S[1], self._backoff_s * 2)

    def _close(self) -> None:
        self.live = False
        for event in self._answers.values():
            event.set()  # a waiter asks Redis again
        self._answers.clear()
        self._answers_read.clear()
        reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(Exception):
                reader[0].remove_reader(reader[1])
        pubsub, self._pubsub = self._pubsub, None
        client, self._client = self._client, None
        with contextlib.suppress(Exception):
            if pubsub is not None:
                pubsub.close()
        with contextlib.suppress(Exception):
            if client is not None:
                client.close()
