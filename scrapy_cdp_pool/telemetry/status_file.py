"""``CDP_POOL_STATUS_FILE``: status samples as JSON lines, one object per line,
flushed after each, so a crash keeps every line written before it.

The file is opened for appending: a crawl resumed with ``JOBDIR`` continues
the same file, and each line's ``timestamp`` tells runs apart. It is created
0600 (its lines name endpoints, hosts and figures of the crawl: only the
crawl's user reads them); an existing file of the crawl's user that others
could read is made 0600, with an INFO line.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Any, TextIO

from scrapy_cdp_pool.shared.paths import open_private_for_append
from scrapy_cdp_pool.telemetry.sample import StatusSample

logger = logging.getLogger(__name__)


class StatusFile:
    """An open JSON lines file.

    :raises OSError: the file cannot be opened for appending (missing folder,
        no permission): raised at start-up, not at the first sample.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: TextIO | None = open_private_for_append(self.path, "CDP_POOL_STATUS_FILE")

    def write(self, sample: StatusSample) -> None:
        """Append ``sample`` as one line and flush it to the OS."""
        if self._file is None:
            return
        self._file.write(json.dumps(sample.as_json(), separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file. Idempotent."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def abandon(self) -> None:
        """Stop writing (the disk is full): what is buffered is dropped."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()


def read_status_file(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """The samples of a status file, in file order, and how many lines were
    skipped as not JSON objects (a line cut short by a crash)."""
    samples: list[dict[str, Any]] = []
    skipped = 0
    with Path(path).open(encoding="utf-8") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                skipped += 1
                continue
            if isinstance(value, dict):
                samples.append(value)
            else:
                skipped += 1
    return samples, skipped
