"""FleetHealthBook: profile health (failures, retirement) shared by every
worker of a cluster.

Key: ``P profile_health:{name}``, a hash with ``uses``, ``failures``,
``consecutive_failures`` (reset by a success on any worker) and ``retired``
(the reason, set once). ``CDP_POOL_PROFILE_MAX_FAILURES`` consecutive failures
across the fleet retire the profile for every worker: the script that counts
a failure decides, so two workers failing at once retire it once.

The crawl calls the book synchronously on its event loop (as it calls
:class:`~scrapy_cdp_pool.profiles.health.HealthBook`, whose local counts and
``cdp_pool/profile/<name>/...`` stats it keeps); the Redis writes go, in order,
through one thread of this worker. A retirement decided by the fleet is taken
in at the next call and logged once (WARNING), and the fleet's verdict is read
before each request of the profile (with the profile, in one round trip:
:meth:`FleetHealthBook.retired_field`). So a failure on one worker retires the
profile for a request another worker starts a Redis round trip later at most.

A failure is written at once (the script above). A success resets
``consecutive_failures`` in one pipelined round trip with the uses counted so
far, only when there may be failures to reset: the fleet's count, read by the
frontier's take with the request (:meth:`FleetHealthBook.read_failures`), was
not 0, or was not read, or this worker counted a failure of the profile it
has not reset, or has one still being written. Else no write (the common case:
before, one round trip per request of a profile, 0.99 per page in
``benchmarks/cluster.py --crawl``): the profile's lock was this worker's from
that read on, so no other worker's request of it failed in between. Uses not
written with an outcome are written every :data:`USES_WRITE_EVERY` per
profile and at close.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.profiles.health import HealthBook

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger(__name__)

#: uses of a profile counted on this worker and not written with an outcome
#: are written once they reach this many (and at close)
USES_WRITE_EVERY = 100

# KEYS: the health hash. ARGV: max failures, why, the setting's name.
# Returns {consecutive failures, retirement reason or ''}.
_FAILED = """
redis.call('HINCRBY', KEYS[1], 'failures', 1)
local count = redis.call('HINCRBY', KEYS[1], 'consecutive_failures', 1)
local retired = redis.call('HGET', KEYS[1], 'retired')
if retired then return {count, retired} end
if count >= tonumber(ARGV[1]) then
  retired = 'retired after ' .. count .. ' consecutive failures across the cluster ('
            .. ARGV[3] .. ' = ' .. ARGV[1] .. '; last: ' .. ARGV[2] .. ')'
  redis.call('HSET', KEYS[1], 'retired', retired)
  return {count, retired}
end
return {count, ''}
"""


class FleetHealthBook(HealthBook):
    """A :class:`HealthBook` whose counts and retirements are the cluster's.

    ``redis``: a ``redis.Redis`` client; ``prefix``: the cluster's key prefix.
    :meth:`close` waits for the writes still queued (at spider close).
    """

    def __init__(
        self,
        stats: Any,
        max_failures: int,
        redis: Redis,
        prefix: str,
        crawler: Any = None,
        prefix_of: Callable[[str], str] | None = None,
    ) -> None:
        """``prefix_of(name)``: the prefix of the bucket holding profile
        ``name`` (default ``prefix``; :mod:`~scrapy_cdp_pool.cluster.shards`)."""
        super().__init__(stats, max_failures)
        self.redis = redis
        self.prefix = prefix
        self.prefix_of = prefix_of or (lambda _name: prefix)
        self.crawler = crawler
        self._failed_script = redis.register_script(_FAILED)
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdp-pool-health")
        self._pending: list[tuple[str, Future[Any]]] = []
        #: profiles whose fleet count of consecutive failures, read with their
        #: request now in flight, was 0 (:meth:`read_failures`)
        self._clean: set[str] = set()
        self._uses: dict[str, int] = {}  # uses not written yet, per profile
        self._uses_lock = threading.Lock()  # counted on the loop, written in the thread
        self._failing = False

    def key(self, name: str) -> str:
        return f"{self.prefix_of(name)}profile_health:{name}"

    # HealthBook ------------------------------------------------------------

    def used(self, name: str) -> None:
        self._take_in()
        super().used(name)
        with self._uses_lock:  # written with an outcome, or in a batch
            uses = self._uses[name] = self._uses.get(name, 0) + 1
        if uses >= USES_WRITE_EVERY:
            self._submit(name, self._write_uses, name)

    def read_failures(self, name: str, count: int | None) -> None:
        """The fleet's ``consecutive_failures`` of ``name`` as read with its
        request now in flight (by the take, under the profile's lock), or
        ``None`` when not read."""
        if count == 0:
            self._clean.add(name)
        else:
            self._clean.discard(name)

    def succeeded(self, name: str) -> None:
        self._take_in()
        nothing_to_reset = (
            name in self._clean
            and self[name].consecutive_failures == 0
            and not any(pending == name for pending, _ in self._pending)
        )
        super().succeeded(name)
        if not nothing_to_reset:
            self._submit(name, self._write, name, None)

    def failed(self, name: str, why: str) -> str | None:
        """Count a failure here and in the fleet; the fleet's count decides
        a retirement, taken in (and logged) once its answer is back. Returns
        ``None``: the caller does not log it a second time."""
        self._take_in()
        self._clean.discard(name)
        record = self[name]
        record.consecutive_failures += 1
        self.inc(name, "failures")
        self._submit(name, self._write, name, why)
        return None

    def _write(self, name: str, why: str | None) -> Any:
        """In the writer thread: the uses counted so far and a success
        (``why`` ``None``: one round trip) or a failure; the failure
        script's answer."""
        with self._uses_lock:
            uses = self._uses.pop(name, 0)
        key = self.key(name)
        if why is not None:  # rare: the uses, then the script
            if uses:
                self.redis.hincrby(key, "uses", uses)
            return self._failed_script(
                keys=[key], args=[self.max_failures, why, "CDP_POOL_PROFILE_MAX_FAILURES"]
            )
        with self.redis.pipeline(transaction=False) as pipe:
            if uses:
                pipe.hincrby(key, "uses", uses)
            pipe.hset(key, "consecutive_failures", 0)
            return pipe.execute()[-1]

    def retire(self, name: str, reason: str) -> str:
        """Retire ``name`` here and for the fleet (the first reason stays)."""
        reason = super().retire(name, reason)
        self._submit(name, self.redis.hsetnx, self.key(name), "retired", reason)
        return reason

    def retired(self, name: str) -> str | None:
        self._take_in()
        return super().retired(name)

    # The fleet ---------------------------------------------------------------

    def pull(self, name: str) -> str | None:
        """The fleet's retirement reason for ``name`` (blocks on Redis: call
        it in a thread), ``None`` while in service."""
        reason = self.redis.hget(*self.retired_field(name))
        return _text(reason) if reason is not None else None

    def retired_field(self, name: str) -> tuple[str, str]:
        """``(hash key, field)`` of the fleet's retirement reason for ``name``
        (absent while in service): read with the profile, in one round trip."""
        return self.key(name), "retired"

    def adopt(self, name: str, reason: str | None) -> None:
        """Take in the fleet's verdict (read with the profile, in a thread; here
        on the event loop)."""
        if reason is not None and super().retired(name) is None:
            super().retire(name, reason)
            logger.warning("Profile %r %s", name, reason, extra={"crawler": self.crawler})

    def close(self) -> None:
        """Write the uses left, wait for the queued writes and take in their answers."""
        for name in list(self._uses):
            self._submit(name, self._write_uses, name)
        self._writer.shutdown(wait=True)
        self._take_in()

    def _write_uses(self, name: str) -> None:
        with self._uses_lock:
            uses = self._uses.pop(name, 0)
        if uses:
            self.redis.hincrby(self.key(name), "uses", uses)

    def _submit(self, name: str, call: Any, *args: Any, **kwargs: Any) -> None:
        try:
            future = self._writer.submit(call, *args, **kwargs)
        except RuntimeError:  # closed: the crawl is over
            return
        self._pending.append((name, future))

    def _take_in(self) -> None:
        """Apply the answers of finished writes: retirements, errors."""
        if not self._pending:
            return
        still: list[tuple[str, Future[Any]]] = []
        for name, future in self._pending:
            if not future.done():
                still.append((name, future))
                continue
            error = future.exception()
            if error is not None:
                if not self._failing:  # once per outage
                    self._failing = True
                    logger.warning(
                        "Profile %r: its health could not be written to the cluster's Redis "
                        "(%s); counted on this worker only until Redis answers",
                        name,
                        type(error).__name__,
                        extra={"crawler": self.crawler},
                    )
                continue
            self._failing = False
            result = future.result()
            if isinstance(result, list) and len(result) == 2 and result[1]:
                self.adopt(name, _text(result[1]))
        self._pending = still


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
