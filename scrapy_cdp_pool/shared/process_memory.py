"""Memory of a process and of a whole process tree, through psutil.

An embedded Chromium is a dozen processes sharing libraries and memory: summing
their RSS counts the shared pages once per process. Where the OS gives it
(Linux ``/proc/<pid>/smaps_rollup``), PSS divides each shared page among the
processes that map it, so the tree's PSS is its real footprint;
:attr:`TreeMemory.memory_bytes` prefers it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import psutil

MB = 1024 * 1024


@dataclass(frozen=True)
class TreeMemory:
    """A process tree's memory at one instant.

    ``rss_bytes``: sum of the processes' resident set sizes (bytes).
    ``pss_bytes``: sum of their proportional set sizes (bytes), ``None`` where
    the OS does not give PSS for every process of the tree.
    ``processes``: how many processes were measured.
    """

    rss_bytes: int
    pss_bytes: int | None
    processes: int

    @property
    def memory_bytes(self) -> int:
        """PSS where known, else RSS (bytes)."""
        return self.pss_bytes if self.pss_bytes is not None else self.rss_bytes

    @property
    def source(self) -> str:
        """``"pss"`` or ``"rss"``: what :attr:`memory_bytes` is."""
        return "pss" if self.pss_bytes is not None else "rss"

    @property
    def rss_mb(self) -> float:
        return self.rss_bytes / MB

    @property
    def pss_mb(self) -> float | None:
        return None if self.pss_bytes is None else self.pss_bytes / MB

    @property
    def memory_mb(self) -> float:
        return self.memory_bytes / MB


def process_tree_memory(pid: int) -> TreeMemory | None:
    """RSS and PSS of process ``pid`` and all its descendants.

    A child that exits while it is read is skipped. Returns ``None`` when
    ``pid`` itself is gone (or cannot be read at all).
    """
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None
    rss = 0
    pss: int | None = 0
    measured = 0
    for process in processes:
        try:
            process_rss, process_pss = _memory(process)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue  # exited between the listing and the read
        except psutil.AccessDenied:
            if process is root:
                return None
            continue
        measured += 1
        rss += process_rss
        pss = None if pss is None or process_pss is None else pss + process_pss
    if measured == 0:
        return None
    return TreeMemory(rss_bytes=rss, pss_bytes=pss, processes=measured)


def trees_memory(pids: list[int]) -> TreeMemory | None:
    """:func:`process_tree_memory` of several trees (an embedded server and
    its dedicated ones), added up; ``None`` when none could be read."""
    return added(map(process_tree_memory, pids))


def added(readings: Iterable[TreeMemory | None]) -> TreeMemory | None:
    """Several trees' memories added up (PSS only where every one has it);
    ``None`` when none was read."""
    memories = [m for m in readings if m is not None]
    if not memories:
        return None
    pss: int | None = 0
    for memory in memories:
        pss = None if pss is None or memory.pss_bytes is None else pss + memory.pss_bytes
    return TreeMemory(
        rss_bytes=sum(m.rss_bytes for m in memories),
        pss_bytes=pss,
        processes=sum(m.processes for m in memories),
    )


def _memory(process: psutil.Process) -> tuple[int, int | None]:
    """``(rss, pss)`` in bytes; ``pss`` is ``None`` where the OS has none."""
    try:
        full = process.memory_full_info()
    except psutil.AccessDenied:
        return int(process.memory_info().rss), None
    pss = getattr(full, "pss", None)
    return int(full.rss), None if pss is None else int(pss)


def process_rss_bytes(pid: int | None = None) -> int | None:
    """RSS of one process (bytes): this one when ``pid`` is ``None``. Its
    children, an embedded browser server among them, are not counted.
    ``None`` when the process is gone."""
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None
