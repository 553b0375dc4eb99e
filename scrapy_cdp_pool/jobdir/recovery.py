"""The priority queue's state (Scrapy's ``requests.queue/active.json``), rebuilt
from the rows in the JOBDIR database, so a crawl resumes even when it was killed
before Scrapy could write that file.

A disk queue's row name is its key under ``requests.queue/``: ``<priority>`` or
``<priority>s`` (start requests) for Scrapy's ``ScrapyPriorityQueue``, and
``<gate dir>/<priority>[s]`` for :class:`~scrapy_cdp_pool.ProfileAwarePriorityQueue`,
whose gate directory is a one-way name of the gate key (profile, host, and
the time a retry waits for). The gate key is read back from a request of that
queue: it was computed from the request's URL and meta when it was pushed. Rows
whose gate cannot be matched (a gate key format that changed between versions)
are moved to the queue of the gate key they get now.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from scrapy import Request
from scrapy.pqueues import ScrapyPriorityQueue

from scrapy_cdp_pool.core.gates import (
    NOT_BEFORE_META_KEY,
    PROFILE_META_KEY,
    gate_key,
    not_before_suffix,
)
from scrapy_cdp_pool.core.queue import ProfileAwarePriorityQueue, _path_safe
from scrapy_cdp_pool.errors import JobdirError
from scrapy_cdp_pool.jobdir.store import JobStore

State = dict[str, list[int]] | list[int]


def recover_state(store: JobStore, pqclass: type[Any]) -> State:
    """``startprios`` for ``pqclass``, from the queues that have rows.

    :raises JobdirError: ``pqclass`` is not one this module can resume, or the
        rows were written by another priority queue class.
    """
    names = store.queues()
    if issubclass(pqclass, ProfileAwarePriorityQueue):
        return _gate_state(store, names)
    if issubclass(pqclass, ScrapyPriorityQueue):
        return sorted({_priority(name, name) for name in names})
    raise JobdirError(
        f"SCHEDULER_PRIORITY_QUEUE: {pqclass.__module__}.{pqclass.__qualname__} cannot be "
        "resumed by the durable JOBDIR; use scrapy_cdp_pool.ProfileAwarePriorityQueue "
        "(the add-on's) or scrapy.pqueues.ScrapyPriorityQueue, or set "
        "CDP_POOL_JOBDIR_DURABLE = False"
    )


def _priority(text: str, name: str) -> int:
    try:
        return int(text.removesuffix("s"))
    except ValueError:
        raise JobdirError(
            f"JOBDIR queue {name!r} was not written by this SCHEDULER_PRIORITY_QUEUE; "
            "resume with the priority queue class the crawl started with"
        ) from None


def _gate_state(store: JobStore, names: Iterable[str]) -> dict[str, list[int]]:
    state: dict[str, set[int]] = {}
    for name in names:
        directory, _, priority_text = name.rpartition("/")
        priority = _priority(priority_text, name)
        data = store.peek(name, lifo=False)
        if data is None:  # queues() lists queues that have rows
            continue
        gate = _matching_gate(directory, pickle.loads(data))  # noqa: S301 - our own JOBDIR
        if gate is not None:
            state.setdefault(gate, set()).add(priority)
            continue
        for row in list(store.rows(name)):
            gate = gate_key(_bare_request(pickle.loads(row.data)))  # noqa: S301
            store.rename(row.row_id, f"{_path_safe(gate)}/{priority_text}")
            state.setdefault(gate, set()).add(priority)
    return {gate: sorted(priorities) for gate, priorities in state.items()}


def _matching_gate(directory: str, fields: dict[str, Any]) -> str | None:
    """The gate key the queue had when this request was pushed into it."""
    meta = fields.get("meta") or {}
    profile = meta.get(PROFILE_META_KEY)
    base = f"{profile if profile else ''}|{urlparse(fields['url']).hostname or ''}"
    candidates = [base]
    suffix = not_before_suffix(meta.get(NOT_BEFORE_META_KEY))
    if suffix:
        candidates.append(base + suffix)
    for gate in candidates:
        if _path_safe(gate) == directory:
            return gate
    return None


def _bare_request(fields: dict[str, Any]) -> Request:
    """Enough of a stored request to compute its gate key (URL and meta)."""
    return Request(fields["url"], meta=fields.get("meta") or {})
