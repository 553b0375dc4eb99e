"""Buckets: a cluster crawl's state split over a Redis Cluster's shards.

Each bucket is a whole frontier (:class:`~scrapy_cdp_pool.cluster.frontier.Frontier`:
queues, gates, leases, profile locks, host slots, pauses, fingerprints,
wake tokens) under a hash tag of its own, so each of its scripts runs on one
shard, atomically. Bucket 0 keeps the crawl's prefix ``cdp_pool:{<name>}:``;
bucket ``k > 0`` is ``cdp_pool:shard:{<name>|<i>}:`` (``i`` picked so that its
slot lands on the primary the layout wants: :func:`choose_tags`).

- **Layout**: ``CDP_POOL_CLUSTER_SHARDS`` buckets, or by default one on one
  Redis (exactly the crawl of one bucket, as before) and :data:`PER_PRIMARY`
  per primary of a Redis Cluster (spread evenly by slot). The first worker
  stores the layout (``<bucket 0>shards``, a JSON list of the tags, ``SET
  NX``) and every worker uses the stored one: a worker whose setting asks for
  another count is refused at start by name (:func:`resolve_layout`). A crawl
  started before the layout existed keeps its one bucket.
- **Routing** (:meth:`Buckets.index`): a request with a profile goes to its
  profile's bucket (its queue, its profile lock, the stored profile and its
  health in one slot: one request in flight per profile stays fleet-wide and
  atomic), else to its host's bucket.
- **Leases** carry their bucket: ``<id>`` in bucket 0, ``<k>/<id>`` in
  bucket ``k`` (:meth:`Buckets.lease`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.cluster.keys import key_prefix

if TYPE_CHECKING:
    from scrapy_cdp_pool.cluster.frontier import Frontier

PER_PRIMARY = 2
"""Buckets per primary of a Redis Cluster when ``CDP_POOL_CLUSTER_SHARDS`` is
0 (auto): the hosts and profiles hash into buckets, so more than one per
primary evens out each primary's share."""
LAYOUT_KEY = "shards"
"""After bucket 0's prefix: the stored layout, a JSON list of the buckets'
hash tags (bucket 0's first)."""
_SEARCH = 100_000
"""Most candidate tags tried for a primary (each is one CRC16: instant)."""


def bucket_prefix(name: str, tag: str) -> str:
    """The key prefix of the bucket with hash tag ``tag`` of crawl ``name``."""
    return key_prefix(name) if tag == name else f"cdp_pool:shard:{{{tag}}}:"


def choose_tags(name: str, count: int, owner: Any = None) -> list[str]:
    """``count`` hash tags, ``name``'s first; ``owner(prefix)``: the primary
    (any hashable) serving a prefix's slot on a Redis Cluster (``None``: one
    Redis, the tags are ``<name>|1``, ``<name>|2``...). On a cluster the
    tags are spread so that each primary serves ``count / primaries``
    buckets (rounded up), in the order the search finds them."""
    if owner is None:
        return [name, *(f"{name}|{i}" for i in range(1, count))]
    first = owner(bucket_prefix(name, name))
    return [name, *_spread(name, count, first, owner)]


def _spread(name: str, count: int, first: Any, owner: Any) -> list[str]:
    """Tags ``<name>|<i>`` for buckets 1.. ``count - 1``, at most
    ``count / primaries`` (rounded up) per primary, bucket 0's included."""
    primaries = {first, *owner_all(owner)}
    cap = math.ceil(count / len(primaries))
    held: dict[Any, int] = defaultdict(int)
    held[first] = 1
    tags: list[str] = []
    for i in range(1, _SEARCH):
        if len(tags) == count - 1:
            break
        tag = f"{name}|{i}"
        node = owner(bucket_prefix(name, tag))
        if held[node] < cap:
            held[node] += 1
            tags.append(tag)
    return tags


def resolve_layout(client: Any, name: str, requested: int, owner: Any = None) -> list[str]:
    """The crawl's bucket tags: stored by the first worker, else chosen now
    (``requested`` buckets; 0: one on one Redis, :data:`PER_PRIMARY` per
    primary on a cluster, ``owner`` as :func:`choose_tags`) and stored.

    :raises ValueError: ``requested`` is not 0 and the stored layout has
        another count (naming ``CDP_POOL_CLUSTER_SHARDS``, both counts and
        the key).
    :raises redis.exceptions.RedisError: Redis did not answer."""
    base = key_prefix(name)
    key = base + LAYOUT_KEY
    stored = client.get(key)
    if stored is None:
        if client.exists(base + "seq"):
            tags = [name]  # a crawl begun before buckets existed: kept in one
        elif owner is None:
            tags = choose_tags(name, requested or 1)
        else:
            primaries = len(set(owner_all(owner)))
            tags = choose_tags(name, requested or PER_PRIMARY * primaries, owner)
        if client.set(key, json.dumps(tags), nx=True) and client.exists(base + "paused"):
            for tag in tags[1:]:  # an operator's pause set before the first worker
                client.set(bucket_prefix(name, tag) + "paused", client.get(base + "paused"))
        stored = client.get(key)
    tags = [str(tag) for tag in json.loads(stored)]
    if requested and requested != len(tags):
        raise ValueError(
            f"CDP_POOL_CLUSTER_SHARDS = {requested}: cluster crawl {name!r} is split into "
            f"{len(tags)} buckets by its first worker ({key}); set {len(tags)} or 0 (the "
            "stored layout), or start a new crawl (another CDP_POOL_CLUSTER_NAME, or purge it)"
        )
    return tags


def owner_all(owner: Any) -> Iterable[Any]:
    """The primaries ``owner`` knows (its ``primaries`` attribute)."""
    return list(getattr(owner, "primaries", ()))


def stored_prefixes(client: Any, name: str) -> list[str]:
    """The prefixes of crawl ``name``'s buckets as stored (bucket 0's alone
    when no layout is stored), for the operator's commands.

    :raises redis.exceptions.RedisError: Redis did not answer."""
    stored = client.get(key_prefix(name) + LAYOUT_KEY)
    tags = [str(tag) for tag in json.loads(stored)] if stored else [name]
    return [bucket_prefix(name, tag) for tag in tags]


class SlotOwner:
    """``owner(prefix)`` for :func:`choose_tags` from redis-py's cluster
    client: the name of the primary serving the prefix's slot."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.primaries = [node.name for node in client.get_primaries()]

    def __call__(self, prefix: str) -> str:
        return str(self.client.get_node_from_key(prefix + "seq").name)


def _hash_index(key: str, count: int) -> int:
    if count == 1:
        return 0
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


class Buckets:
    """The crawl's buckets (``frontiers[0]`` is bucket 0, the crawl's own
    prefix) and the routing of requests, leases and hosts to them."""

    def __init__(self, frontiers: list[Frontier]) -> None:
        self.frontiers = frontiers
        self.count = len(frontiers)

    @property
    def home(self) -> Frontier:
        return self.frontiers[0]

    @property
    def calls(self) -> int:
        """Round trips made by every bucket's frontier."""
        return sum(frontier.calls for frontier in self.frontiers)

    def index(self, host: str, profile: str = "") -> int:
        """The bucket of a request: its profile's when it has one, else its host's."""
        return _hash_index(f"p:{profile}" if profile else f"h:{host}", self.count)

    def of(self, host: str, profile: str = "") -> Frontier:
        return self.frontiers[self.index(host, profile)]

    def of_host(self, host: str) -> Frontier:
        """The host's home bucket (its fleet-wide spacing claims)."""
        return self.frontiers[self.index(host)]

    def of_profile(self, profile: str) -> Frontier:
        return self.frontiers[self.index("", profile)]

    @staticmethod
    def lease(bucket: int, lease_id: str) -> str:
        """The worker's name of lease ``lease_id`` of ``bucket``."""
        return lease_id if bucket == 0 else f"{bucket}/{lease_id}"

    @staticmethod
    def split(lease: str) -> tuple[int, str]:
        """``(bucket, lease id in it)`` of a name from :meth:`lease`."""
        bucket, sep, lease_id = lease.partition("/")
        return (int(bucket), lease_id) if sep else (0, lease)

    @classmethod
    def group_ids(cls, leases: Iterable[str]) -> dict[int, list[str]]:
        """Lease (or request) names by bucket, as ids in their bucket."""
        grouped: dict[int, list[str]] = defaultdict(list)
        for lease in leases:
            bucket, lease_id = cls.split(lease)
            grouped[bucket].append(lease_id)
        return grouped

    @staticmethod
    def profile_prefixes(prefixes: list[str]) -> Callable[[str], str]:
        """``prefix_of(profile)`` for the buckets ``prefixes`` (as :meth:`index`)."""

        def prefix_of(profile: str) -> str:
            return prefixes[_hash_index(f"p:{profile}", len(prefixes))]

        return prefix_of

    def of_lease(self, lease: str) -> tuple[Frontier, str]:
        bucket, lease_id = self.split(lease)
        return self.frontiers[bucket], lease_id

    def group(self, ops: Iterable[str]) -> dict[int, list[str]]:
        """Settle ops (``<op>:<lease>``) by bucket, in their order, with the
        leases' ids in their bucket."""
        grouped: dict[int, list[str]] = defaultdict(list)
        for op in ops:
            bucket, lease_id = self.split(op[2:])
            grouped[bucket].append(op[:2] + lease_id)
        return grouped

    def settle(self, ops: Iterable[str]) -> int:
        """:meth:`Frontier.settle` of each bucket's ops: one round trip per
        bucket with ops; the count settled."""
        return sum(
            self.frontiers[bucket].settle(bucket_ops)
            for bucket, bucket_ops in self.group(ops).items()
        )

    def renew(self, leases: list[str], locks: list[tuple[str, int]]) -> list[str]:
        """:meth:`Frontier.renew` in each bucket holding one of ``leases`` or
        ``locks`` (``(profile, token)``), and in bucket 0 always when there
        are several (the worker's heartbeat, which ``status``, ``purge`` and
        the flush at start read there); the leases and locks lost, as named
        here."""
        if self.count == 1:
            return self.home.renew(leases, locks)
        by_bucket: dict[int, tuple[list[str], list[tuple[str, int]]]] = {0: ([], [])}
        for lease in leases:
            bucket, lease_id = self.split(lease)
            by_bucket.setdefault(bucket, ([], []))[0].append(lease_id)
        for profile, token in locks:
            by_bucket.setdefault(self.index("", profile), ([], []))[1].append((profile, token))
        lost: list[str] = []
        for bucket, (ids, bucket_locks) in by_bucket.items():
            for item in self.frontiers[bucket].renew(ids, bucket_locks):
                lost.append(item if item.startswith("i:") else self.lease(bucket, item))
        return lost

    def holds(self, lease: str) -> bool:
        frontier, lease_id = self.of_lease(lease)
        return frontier.holds(lease_id)

    def pending(self) -> tuple[int, int]:
        """``(queued, leased)`` requests of every bucket (one pipeline: on a
        Redis Cluster the client sends it to each shard at once)."""
        if self.count == 1:
            return self.home.pending()
        home = self.home
        home.calls += 1
        with home.client.pipeline(transaction=False) as pipe:
            for frontier in self.frontiers:
                pipe.get(f"{frontier.prefix}queued")
                pipe.zcard(f"{frontier.prefix}leases")
            answers = pipe.execute()
        queued = sum(int(answer or 0) for answer in answers[0::2])
        return queued, sum(int(answer) for answer in answers[1::2])

    def pause_host(self, host: str, seconds: float) -> float:
        """Pause ``host`` in every bucket (a request to it may be queued in
        any: under its profile's), its home bucket first (its spacing claims
        check the pause there); the seconds the home's pause has left. The
        pause is published (to every worker's
        :class:`~scrapy_cdp_pool.cluster.host_events.HostEvents`) by each."""
        home = self.index(host)
        left = self.frontiers[home].pause_host(host, seconds, channel=self.home.prefix)
        for bucket, frontier in enumerate(self.frontiers):
            if bucket != home:
                frontier.pause_host(host, seconds, channel=self.home.prefix)
        return left

    def pause_left(self, host: str) -> float:
        return self.of_host(host).pause_left(host)

    def leave(self) -> None:
        for frontier in self.frontiers:
            frontier.leave()

    def lock_profile(self, profile: str) -> int | None:
        return self.of_profile(profile).lock_profile(profile)

    def unlock_profile(self, profile: str, token: int) -> bool:
        return self.of_profile(profile).unlock_profile(profile, token)

    def prefix_of_profile(self, profile: str) -> str:
        """Where profile ``profile``'s lock, stored copy and health live."""
        return self.of_profile(profile).prefix

    @property
    def prefixes(self) -> list[str]:
        return [frontier.prefix for frontier in self.frontiers]
