"""``CDP_POOL_STATUS_FILE``: status samples as JSON lines, one object per line,
flushed after each, so a crash keeps every line written before it.

The file is opened for appending: a crawl resumed with ``JOBDIR`` continues
the same file, and each line's ``timestamp`` tells runs apart. It is created
0600 (its lines name endpoints, hosts and figures of the crawl: only the
crawl's user reads them); an existing file of the crawl's user that others
could read is made 0600, with an INFO line.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any, TextIO

from scrapy_cdp_pool.telemetry.sample import StatusSample

logger = logging.getLogger(__name__)

FILE_MODE = 0o600


class StatusFile:
    """An open JSON lines file.

    :raises OSError: the file cannot be opened for appending (missing folder,
        no permission): raised at start-up, not at the first sample.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            info = os.fstat(fd)
            if info.st_mode & 0o077 and info.st_uid == os.geteuid():
                os.fchmod(fd, FILE_MODE)
                logger.info(
                    "CDP_POOL_STATUS_FILE %s was readable by other users (mode %s): made 0600",
                    self.path,
                    oct(stat.S_IMODE(info.st_mode)),
                )
            self._file: TextIO | None = os.fdopen(fd, "a", encoding="utf-8")
        except BaseException:
            os.close(fd)
            raise

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
