"""Where the ladder's learned state is kept between runs.

A store is any object with ``load()`` and ``save(state)``
(:class:`LadderStore`); ``CDP_POOL_LADDER_STORE`` names a class of one
(built with Scrapy's ``build_from_crawler``: ``from_crawler(crawler)`` or
``__init__()``), e.g. a cluster's shared store. Without it, a crawl with
``JOBDIR`` keeps it in ``JOBDIR/cdp_pool_ladder.json`` (:class:`JobdirLadderStore`);
without either, it lives as long as the crawl.

The state is small (one entry per kind of page) and saved whole each time a
kind's start changes and at the end of the crawl.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Protocol

from scrapy_cdp_pool.ladder.learner import KindState

FILE_NAME = "cdp_pool_ladder.json"
FORMAT_VERSION = 1


class LadderStore(Protocol):
    """``load()``: the state saved last (``{}`` when none); ``save(state)``:
    replace it. Both are called from the crawl's event loop and must not
    block long (the state is a few KB)."""

    def load(self) -> dict[str, KindState]: ...

    def save(self, state: dict[str, KindState]) -> None: ...


def encode(state: dict[str, KindState]) -> str:
    """The state as JSON text, for stores that keep text."""
    kinds = {kind: s.as_dict() for kind, s in sorted(state.items())}
    return json.dumps({"version": FORMAT_VERSION, "kinds": kinds}, indent=1)


def decode(text: str, where: str) -> dict[str, KindState]:
    """:raises ValueError: naming ``where``, when ``text`` is not a saved state."""
    try:
        data = json.loads(text)
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {FORMAT_VERSION}")
        return {
            str(kind): KindState(str(entry["start"]), int(entry.get("counted", 0)))
            for kind, entry in data["kinds"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{where}: not a render ladder state ({e})") from None


class JobdirLadderStore:
    """``JOBDIR/cdp_pool_ladder.json``, replaced atomically (written to a
    temporary file, then renamed), mode 0600."""

    def __init__(self, jobdir: str | Path) -> None:
        self.path = Path(jobdir) / FILE_NAME

    def load(self) -> dict[str, KindState]:
        """:raises ValueError: the file is there but is not a saved state."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        return decode(text, str(self.path))

    def save(self, state: dict[str, KindState]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ladder-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(encode(state))
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
