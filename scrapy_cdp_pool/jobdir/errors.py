"""The durable JOBDIR's errors (a leaf: the lock and the store raise them)."""

from __future__ import annotations


class JobdirError(RuntimeError):
    """The JOBDIR cannot be used as it is; the message says why and what to do."""


class JobdirCorrupt(JobdirError):
    """The JOBDIR's database cannot be read, or is not one this plugin wrote
    (empty, tables missing): refused at start, never taken for a fresh crawl.
    ``path`` is the database."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(
            f"{path}: {problem}; the crawl cannot resume from this JOBDIR: restore it from a "
            "copy, or start a new JOBDIR (a JOBDIR without this file starts afresh)"
        )
        self.path = path
