"""SharedProfiles: the fleet's profiles in Redis, so that the storage state one
worker saves back is what the next worker to use that profile loads.

Keys (``P`` is the cluster's prefix, ``cdp_pool:{CDP_POOL_CLUSTER_NAME}:``):

- ``P profile:{name}``: a hash. ``state`` (the Playwright ``storageState`` as
  JSON), ``identity`` (the identity file's content as JSON, ``{}`` without
  one), ``version`` (writes so far: 0 once seeded, +1 per save-back),
  ``token`` (the fencing token of the last save-back, ``""`` for the seed),
  ``owner`` (the worker that wrote it last), ``saved_at_ms`` (that worker's
  clock, Unix milliseconds). About the size of the two JSON texts.
- ``P profiles``: a set of the names stored.
- ``P profile_health:{name}``: the fleet's health of the profile (see
  :mod:`scrapy_cdp_pool.cluster.profile_health`).
- ``P profile:{name}``: the profile lock, written by the frontier's take
  (hash: ``owner``, ``token`` from ``INCR P fence``, a ``PEXPIRE`` lease).
  Only read here.

Fencing: a save-back is one Lua script that writes only while the profile
lock's ``token`` is the one the request was taken with. A worker whose lease
expired (stalled, partitioned), so that another worker took the profile, gets
:class:`StaleProfileWrite` instead of overwriting the newer state; it is logged
and counted in ``cdp_pool/cluster/stale_profile_writes``.

Seeding: :meth:`SharedProfiles.seed` copies each valid profile of
``CDP_POOL_PROFILES_DIR`` that the store does not hold yet, in one script per
profile (many workers starting together store it once); a stored profile is
never overwritten by its file (its state may be newer: saved back by the
fleet), and one whose identity file differs from the store's is reported.
:func:`export_profiles` writes the store back to files (0600, atomically).

Same validation and plain-data form as the files
(:mod:`scrapy_cdp_pool.profiles.validate`): a stored profile that is not valid
fails its requests with :class:`~scrapy_cdp_pool.errors.ProfileFileError`
naming the key and the problem, never a value.

The calls block on Redis (the ``redis`` package's client): the crawl makes them
in a thread (:class:`~scrapy_cdp_pool.cluster.profile_hook.SharedProfilesMiddleware`,
and the profiles' own ``asyncio.to_thread`` for save-back); :meth:`load` and
:meth:`names` answer from what was last read.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisClusterException, RedisError

from scrapy_cdp_pool.errors import ProfileFileError, ProfileStoreUnreachable, StaleProfileWrite
from scrapy_cdp_pool.profiles.store import (
    IDENTITY_SUFFIX,
    STATE_SUFFIX,
    Profile,
    ProfileStore,
    _raise_problems,
    check_name,
    write_atomically,
)
from scrapy_cdp_pool.profiles.validate import identity_problems, storage_state_problems

__all__ = [
    "STALE_WRITES_STAT",
    "UNCHANGED_SAVES_STAT",
    "ProfileStoreUnreachable",
    "SeedReport",
    "SharedProfiles",
    "StaleProfileWrite",
    "export_profiles",
]

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger(__name__)

NOT_STORED = "is not in the cluster's profile store (seed it from CDP_POOL_PROFILES_DIR)"
"""The reason of the ``ProfileFileError`` of a profile Redis does not hold."""
#: the stat counting save-backs refused by the fencing token
STALE_WRITES_STAT = "cdp_pool/cluster/stale_profile_writes"
#: the stat counting save-backs not sent: the state is what Redis holds
UNCHANGED_SAVES_STAT = "cdp_pool/cluster/unchanged_profile_saves"

_SEED = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'identity', ARGV[2], 'version', 0,
           'token', '', 'owner', ARGV[3], 'saved_at_ms', ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
return 1
"""

# KEYS: the profile lock, the profile, the set of names.
# ARGV: token, state JSON, owner, time (ms), name.
# Returns {1, version} when written, {0, current token or ''} when refused.
_SAVE = """
local current = redis.call('HGET', KEYS[1], 'token')
if not current then return {0, ''} end
if current ~= ARGV[1] then return {0, current} end
local version = redis.call('HINCRBY', KEYS[2], 'version', 1)
redis.call('HSET', KEYS[2], 'state', ARGV[2], 'token', ARGV[1], 'owner', ARGV[3],
           'saved_at_ms', ARGV[4])
redis.call('SADD', KEYS[3], ARGV[5])
return {1, version}
"""


@dataclass
class SeedReport:
    """What :meth:`SharedProfiles.seed` did: names ``seeded`` (copied from
    files), ``kept`` (already stored, the file not copied), ``differing``
    (kept, and the identity file differs from the stored profile), and
    ``errors`` (invalid files, not copied)."""

    seeded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)
    errors: list[ProfileFileError] = field(default_factory=list)


class SharedProfiles:
    """The profiles of one cluster, in Redis; the same reading interface as
    :class:`~scrapy_cdp_pool.profiles.store.ProfileStore` (``load``,
    ``names``, ``check``, ``save_state``, ``directory``), so the crawl's
    profiles use it in place of the directory.

    ``redis``: a ``redis.Redis`` client (``decode_responses=False``).
    ``prefix``: the cluster's key prefix. ``owner``: this worker's id (stored
    with each write). ``directory``: ``CDP_POOL_PROFILES_DIR`` if set (seed
    source and default export target; paths in messages). ``stats``: the
    crawler's stats, for ``cdp_pool/cluster/stale_profile_writes``.
    """

    def __init__(
        self,
        redis: Redis,
        prefix: str,
        *,
        owner: str,
        directory: str | Path | None = None,
        stats: Any = None,
        crawler: Any = None,
        prefix_of: Callable[[str], str] | None = None,
        prefixes: list[str] | None = None,
    ) -> None:
        """``prefix_of(name)``: the prefix of the crawl's bucket holding
        profile ``name`` (its lock's: :mod:`~scrapy_cdp_pool.cluster.shards`;
        default ``prefix``); ``prefixes``: every bucket's (default ``[prefix]``)."""
        self.redis = redis
        self.prefix = prefix
        self.prefix_of = prefix_of or (lambda _name: prefix)
        self.prefixes = prefixes or [prefix]
        self.owner = owner
        self.directory = Path(directory) if directory else Path(f"redis:{prefix}profiles")
        self.files = ProfileStore(directory) if directory else None
        self.stats = stats
        self.crawler = crawler
        self._seed = redis.register_script(_SEED)
        self._save = redis.register_script(_SAVE)
        self._cache: dict[str, Profile] = {}
        self._names: list[str] = []
        self._tokens: dict[str, int | None] = {}
        #: the fencing token under which each cached copy was read or written
        #: (the copy is what Redis holds while that token holds the lock)
        self._cached_under: dict[str, int | None] = {}
        self._lock = threading.Lock()

    # Keys ------------------------------------------------------------------

    def profile_key(self, name: str) -> str:
        return f"{self.prefix_of(name)}profile:{name}"

    def lock_key(self, name: str) -> str:
        return f"{self.prefix_of(name)}identity:{name}"

    @property
    def names_key(self) -> str:
        """Bucket 0's set of names (each bucket has its own: :meth:`names_key_of`)."""
        return f"{self.prefix}profiles"

    def names_key_of(self, name: str) -> str:
        """The set of names of the bucket holding ``name``."""
        return f"{self.prefix_of(name)}profiles"

    # Seeding ---------------------------------------------------------------

    def seed(self, store: ProfileStore | None = None) -> SeedReport:
        """Copy each valid profile of ``store`` (default: the directory given
        at creation) that the cluster does not hold yet. Blocks on Redis."""
        store = store or self.files
        report = SeedReport()
        if store is None:
            return report
        report.errors = store.check()
        bad = {error.name for error in report.errors}
        for name in store.names():
            if name in bad:
                continue
            profile = store.load(name)
            identity = _dump(profile.identity)
            created = self._seed(
                keys=[self.profile_key(name), self.names_key_of(name)],
                args=[_dump(profile.storage_state), identity, self.owner, _now_ms(), name],
            )
            if created:
                report.seeded.append(name)
                continue
            report.kept.append(name)
            stored = self.redis.hget(self.profile_key(name), "identity")
            if stored is not None and json.loads(stored) != profile.identity:
                report.differing.append(name)
        self.names()
        return report

    # Reading ---------------------------------------------------------------

    def names(self) -> list[str]:
        """The stored profiles, sorted (read from Redis; blocks)."""
        members: set[Any] = set()
        for prefix in self.prefixes:
            members.update(self.redis.smembers(f"{prefix}profiles"))
        self._names = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in members)
        return list(self._names)

    def check(self) -> list[ProfileFileError]:
        """Validate every stored profile (blocks on Redis)."""
        errors: list[ProfileFileError] = []
        for name in self.names():
            try:
                self.fetch(name)
            except ProfileFileError as e:
                errors.append(e)
        return errors

    def fetch(self, name: str) -> Profile:
        """Profile ``name`` as stored now (blocks on Redis), kept for :meth:`load`.

        :raises ProfileFileError: not stored, or not valid (naming the key).
        :raises ProfileStoreUnreachable: Redis did not answer.
        """
        return self.fetch_and_read(name)[0]

    def fetch_and_read(
        self,
        name: str,
        also: tuple[str, str] | None = None,
        prefetched: tuple[bytes | None, bytes | None, bytes | None] | None = None,
    ) -> tuple[Profile, bytes | None]:
        """:meth:`fetch`, and with ``also = (key, field)`` that field of the
        hash ``key`` read in the same round trip (``None`` when absent, or
        without ``also``). ``prefetched``: the stored ``state``, ``identity``
        and ``also`` field as already read (by the frontier's take): validated,
        not read again. Raises as :meth:`fetch`."""
        try:
            profile, value = self._fetch(name, also, prefetched)
        except ProfileStoreUnreachable:
            raise  # the copy last read stays in use
        except ProfileFileError:
            with self._lock:
                self._cache.pop(name, None)  # never an older copy instead
            raise
        with self._lock:
            self._cache[name] = profile
            self._cached_under[name] = self._tokens.get(name)
        return profile, value

    def _fetch(
        self,
        name: str,
        also: tuple[str, str] | None,
        prefetched: tuple[bytes | None, bytes | None, bytes | None] | None = None,
    ) -> tuple[Profile, bytes | None]:
        key = self.profile_key(name)
        bad_name = check_name(name)
        if bad_name:
            raise ProfileFileError(name, Path(key), bad_name)
        value: bytes | None = None
        state_text: Any
        identity_text: Any
        try:
            if prefetched is not None:
                state_text, identity_text, value = prefetched
            elif also is None:
                state_text, identity_text = self.redis.hmget(key, ["state", "identity"])
            else:  # one round trip for both
                with self.redis.pipeline(transaction=False) as pipe:
                    pipe.hmget(key, ["state", "identity"])
                    pipe.hget(*also)
                    (state_text, identity_text), value = pipe.execute()
        except (RedisError, RedisClusterException, OSError) as e:
            raise unreachable(name, key, "cannot be read", e) from None
        if state_text is None:
            raise ProfileFileError(name, Path(key), NOT_STORED)
        state = _parse(name, key, "state", state_text)
        _raise_problems(name, Path(key), storage_state_problems(state))
        identity = _parse(name, key, "identity", identity_text) if identity_text else {}
        _raise_problems(name, Path(key), identity_problems(identity))
        state_path, identity_path = self._paths(name)
        return Profile(name, state_path, identity_path, state, identity), value

    def load(self, name: str) -> Profile:
        """Profile ``name`` as last fetched (:meth:`fetch`, which
        :class:`~scrapy_cdp_pool.cluster.profile_hook.SharedProfilesMiddleware`
        calls before each request of it); fetched now, blocking, if never.

        :raises ProfileFileError: as :meth:`fetch`.
        """
        with self._lock:
            profile = self._cache.get(name)
        return profile if profile is not None else self.fetch(name)

    def _paths(self, name: str) -> tuple[Path, Path]:
        if self.files is not None:
            return self.files.paths(name)
        key = self.profile_key(name)
        return Path(key), Path(key)

    # Save-back -------------------------------------------------------------

    def remember_token(self, name: str, token: int | None) -> None:
        """The fencing token the request of ``name`` now in flight on this
        worker was taken with (one at a time: the profile lock)."""
        with self._lock:
            self._tokens[name] = token

    def save_state(self, name: str, state: dict[str, Any], token: int | None = None) -> Path:
        """Write ``state`` as profile ``name``'s storage state, if the
        profile lock still has the request's fencing token (``token``, else
        the one remembered for ``name``). Blocks on Redis.

        :raises StaleProfileWrite: refused by the fencing token (logged,
            counted in ``cdp_pool/cluster/stale_profile_writes``).
        :raises ProfileFileError: the name or the state is invalid.
        """
        key = self.profile_key(name)
        bad_name = check_name(name)
        if bad_name:
            raise ProfileFileError(name, Path(key), bad_name)
        _raise_problems(name, Path(key), storage_state_problems(state), verb="cannot be saved")
        if token is None:
            with self._lock:
                token = self._tokens.get(name)
        if token is None:
            raise self._stale(name, key, None, None)
        if self._unchanged(name, state, token):
            if self.stats is not None:
                self.stats.inc_value(UNCHANGED_SAVES_STAT)
            return Path(key)
        try:
            written, value = self._save(
                keys=[self.lock_key(name), key, self.names_key_of(name)],
                args=[str(token), _dump(state), self.owner, _now_ms(), name],
            )
        except (RedisError, RedisClusterException, OSError) as e:
            raise unreachable(name, key, "cannot be saved", e) from None
        if not written:
            current = int(value) if value not in (b"", "", None) else None
            raise self._stale(name, key, token, current)
        with self._lock:  # what was written is what the next load gives
            cached = self._cache.get(name)
            if cached is not None:
                self._cache[name] = dataclasses.replace(cached, storage_state=state)
                self._cached_under[name] = token
        return Path(key)

    def _unchanged(self, name: str, state: dict[str, Any], token: int) -> bool:
        """Whether ``state`` is what Redis holds for ``name``: the cached copy,
        read (or written) under ``token``, the request's own (no other worker
        could save it back since), is equal. Such a save-back is not sent (a
        page that changed no cookie or storage: before, one script call per
        request of a profile). A lock lost meanwhile is then not reported as a
        stale write: nothing would have been written either way."""
        with self._lock:
            cached = self._cache.get(name)
            return (
                cached is not None
                and self._cached_under.get(name) == token
                and cached.storage_state == state
            )

    def _stale(
        self, name: str, key: str, token: int | None, current: int | None
    ) -> StaleProfileWrite:
        error = StaleProfileWrite(name, key, token, current)
        if self.stats is not None:
            self.stats.inc_value(STALE_WRITES_STAT)
        logger.warning("Profile %r: %s", name, error.problem, extra={"crawler": self.crawler})
        return error

    def stored_version(self, name: str) -> tuple[int, str] | None:
        """``(version, owner)`` of the stored profile, ``None`` if absent."""
        version, owner = self.redis.hmget(self.profile_key(name), ["version", "owner"])
        if version is None:
            return None
        return int(version), owner.decode() if isinstance(owner, bytes) else str(owner or "")


def unreachable(name: str, key: str, verb: str, error: BaseException) -> ProfileStoreUnreachable:
    """The error for a profile Redis did not answer about (redis-py's
    messages name the host and port, never the URL's password)."""
    return ProfileStoreUnreachable(
        name,
        Path(key),
        f"{verb}: the cluster's Redis did not answer ({type(error).__name__}: {error})",
    )


def export_profiles(
    shared: SharedProfiles, directory: str | Path | None = None, names: list[str] | None = None
) -> list[Path]:
    """Write the stored profiles (``names``, default all) to ``directory``
    (default the store's ``CDP_POOL_PROFILES_DIR``) as ``NAME.json`` and, for
    those with a profile, ``NAME.identity.json``: mode 0600, each written
    atomically (a temporary file renamed over the old one), the directory
    created 0700 if missing. Returns the files written. Blocks on Redis.

    :raises ProfileFileError: a stored profile is invalid, or a file cannot
        be written (nothing half-written is left).
    :raises ValueError: no directory given and the store has none.
    """
    if directory is None:
        if shared.files is None:
            raise ValueError(
                "no directory to export the profiles to: give one, or set CDP_POOL_PROFILES_DIR"
            )
        directory = shared.files.directory
    target = Path(directory)
    written: list[Path] = []
    for name in shared.names() if names is None else names:
        profile = shared.fetch(name)
        state_path = target / f"{name}{STATE_SUFFIX}"
        write_atomically(name, state_path, profile.storage_state)
        written.append(state_path)
        if profile.identity:
            identity_path = target / f"{name}{IDENTITY_SUFFIX}"
            write_atomically(name, identity_path, profile.identity)
            written.append(identity_path)
    return written


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _parse(name: str, key: str, field_name: str, text: bytes | str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ProfileFileError(
            name, Path(key), f"field {field_name!r} is not valid JSON ({type(e).__name__})"
        ) from None


def _now_ms() -> int:
    return int(time.time() * 1000)
