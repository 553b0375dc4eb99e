"""CPU seconds and memory of process trees, sampled every 0.2 s by a background thread.

Each process is put in one category:
  server   a browser process: Lightpanda or Chromium (an external server's whole tree, or a
           browser that the crawler or Playwright's driver launched)
  driver   Playwright's Node driver (a process named node under the crawler)
  crawler  everything else under the crawler: the runner's Python process
  site     the benchmark site's process (the origin every configuration loads)

CPU of a category at an instant = the sum over its live processes of their own CPU time plus
the CPU time of their children that have exited and been waited for (Linux cutime/cstime),
so a Chromium renderer that lives less than one sampling period is still counted (in its
parent's category). `mark()` takes a fresh sample and returns those sums; the difference of
two marks is the CPU spent between them. Peak RSS (and PSS, where the kernel has
smaps_rollup, read every 5th sample because it is costly) is the highest per-category sum
seen by any sample.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Self

import psutil

CATEGORIES = ("server", "crawler", "driver", "site")
QUIET_CORES = 0.3  # other processes' load under which a machine counts as quiet
BROWSER_HINTS = ("chrom", "lightpanda", "headless_shell")
#: in the paths of the private directory of each server the plugin starts (pool/private_dir.py)
PRIVATE_DIR_MARK = "/cdp-pool-"
MB = 1024 * 1024


def _category(proc: psutil.Process) -> str | None:
    """The process's category, or None while it cannot be told yet: a child
    between fork and exec still runs the crawler's Python (the plugin starts
    its server with a ``preexec_fn``), so it is looked at again next sample
    instead of being filed under 'crawler' for good."""
    try:
        name = proc.name().lower()
        cmdline = proc.cmdline()
    except psutil.Error:
        return "crawler"
    exe = os.path.basename(cmdline[0]).lower() if cmdline else ""
    if name.startswith("node") or exe == "node":  # Node renames its thread node-MainThread
        return "driver"
    if any(h in name or h in exe for h in BROWSER_HINTS) or _in_private_dir(cmdline):
        return "server"
    if "python" in name and "python" in exe:
        return "crawler"
    return None  # e.g. the forked Python that has not exec'd yet (name python, no argv)


def _in_private_dir(cmdline: list[str]) -> bool:
    """Whether a process runs out of the plugin's per-server private directory
    (``cdp-pool-<kind>-*``: its socket, profile or TMPDIR in an argument)."""
    return any(PRIVATE_DIR_MARK in arg for arg in cmdline[1:])


@dataclass
class Snapshot:
    cpu_s: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    rss: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    pss: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))


class TreeSampler:
    """Samples the trees under `server_pid` (all 'server') and `crawler_pid` (classified)."""

    def __init__(
        self,
        crawler_pid: int | None = None,
        server_pid: int | None = None,
        site_pid: int | None = None,
        interval_s: float = 0.2,
        pss_every: int = 5,
    ) -> None:
        self.crawler_pid = crawler_pid
        self.server_pid = server_pid
        self.site_pid = site_pid
        self.interval_s = interval_s
        self.pss_every = pss_every  # PSS (smaps_rollup) costs ~2 ms CPU per Chromium process
        self.peak_rss = dict.fromkeys(CATEGORIES, 0)
        self.peak_pss = dict.fromkeys(CATEGORIES, 0)
        self.pss_available = True
        self.last = Snapshot()
        self.samples = 0
        self._cats: dict[tuple[int, float], str] = {}
        self._prev: dict[tuple[int, float], tuple[str, float, int]] = {}
        self._moved = dict.fromkeys(CATEGORIES, 0.0)  # CPU moved back from parents (see below)
        self._handles: dict[int, psutil.Process] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set_crawler(self, pid: int) -> None:
        with self._lock:
            self.crawler_pid = pid

    # -- sampling ---------------------------------------------------------------------
    def _handle(self, pid: int) -> psutil.Process:
        p = self._handles.get(pid)
        if p is None or not p.is_running():
            p = psutil.Process(pid)
            self._handles[pid] = p
        return p

    def _tree(self, pid: int | None) -> list[psutil.Process]:
        if pid is None:
            return []
        try:
            root = self._handle(pid)
            children = root.children(recursive=True)
        except psutil.Error:
            return []
        out = [root]
        for c in children:
            try:
                out.append(self._handle(c.pid))
            except psutil.Error:
                continue  # exited during the walk (a Chromium renderer): its parent counts it
        return out

    def _sample(self, with_pss: bool) -> Snapshot:
        snap = Snapshot()
        with_pss = with_pss and self.pss_available
        seen: set[int] = set()
        now: dict[tuple[int, float], tuple[str, float, int]] = {}  # key: (category, cpu, ppid)
        for fixed, root in (
            ("server", self.server_pid),
            ("site", self.site_pid),
            (None, self.crawler_pid),
        ):
            for p in self._tree(root):
                seen.add(p.pid)
                try:
                    with p.oneshot():
                        key = (p.pid, p.create_time())
                        cat = self._cats.get(key)
                        if cat is None:
                            cat = fixed or _category(p)
                            if cat is None:
                                cat = "crawler"  # not exec'd yet: counted there, asked again
                            else:
                                self._cats[key] = cat
                        t = p.cpu_times()
                        cpu = t.user + t.system + t.children_user + t.children_system
                        snap.cpu_s[cat] += cpu
                        now[key] = (cat, cpu, p.ppid())
                        snap.rss[cat] += p.memory_info().rss
                        if with_pss:
                            try:
                                snap.pss[cat] += p.memory_full_info().pss
                            except (AttributeError, psutil.AccessDenied):
                                self.pss_available = False
                except psutil.Error:
                    continue  # exited between listing and reading: counted by its parent
        self._handles = {pid: h for pid, h in self._handles.items() if pid in seen}
        self._carry_exited(now)
        for c in CATEGORIES:
            snap.cpu_s[c] += self._moved[c]
        for c in CATEGORIES:
            self.peak_rss[c] = max(self.peak_rss[c], snap.rss[c])
            if with_pss:
                self.peak_pss[c] = max(self.peak_pss[c], snap.pss[c])
        self.last = snap
        self.samples += 1
        return snap

    def _carry_exited(self, now: dict[tuple[int, float], tuple[str, float, int]]) -> None:
        """A process that exited and was reaped has its CPU time added to its
        parent's (children_user/system): when the parent is of another category
        (the plugin's server, reaped by the crawler as the crawl closes, maybe
        before the harness's last mark), its last sampled CPU is moved back to
        its own category, so that it is neither lost there nor counted twice."""
        by_pid = {pid: cat for (pid, _), (cat, _, _) in now.items()}
        for key, (cat, cpu, ppid) in self._prev.items():
            parent = by_pid.get(ppid)
            if key not in now and parent is not None and parent != cat:
                self._moved[cat] += cpu
                self._moved[parent] -= cpu
        self._prev = now

    def sample(self, with_pss: bool = True) -> Snapshot:
        with self._lock:
            return self._sample(with_pss)

    def mark(self) -> dict[str, float]:
        """CPU seconds per category now, with the machine's busy CPU seconds ('busy'), this
        harness's own ('harness') and a monotonic clock ('t')."""
        out = dict(self.sample(with_pss=False).cpu_s)
        sys_t = psutil.cpu_times()
        me = psutil.Process().cpu_times()
        # irq/softirq left out: loopback traffic of the measured trees is accounted there
        out["busy"] = sys_t.user + sys_t.nice + sys_t.system
        out["harness"] = me.user + me.system
        out["t"] = time.monotonic()
        return out

    # -- thread -----------------------------------------------------------------------
    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.interval_s):
            try:
                self.sample(with_pss=n % self.pss_every == 0)
            except (psutil.Error, OSError):
                pass  # a process vanished mid-read; the next sample sees the tree again
            n += 1

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._run, name="tree-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def peaks_mb(self) -> dict[str, dict[str, float | None]]:
        return {
            "rss": {c: round(self.peak_rss[c] / MB, 1) for c in CATEGORIES},
            "pss": {
                c: (round(self.peak_pss[c] / MB, 1) if self.pss_available else None)
                for c in CATEGORIES
            },
        }


def cpu_delta(start: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    return {c: max(0.0, end.get(c, 0.0) - start.get(c, 0.0)) for c in CATEGORIES}


def other_load(start: dict[str, float], end: dict[str, float]) -> float:
    """Cores kept busy between two marks by processes this harness does not measure (other
    users of the machine): the machine's busy time minus the measured trees and the harness."""
    seconds = end["t"] - start["t"]
    if seconds <= 0:
        return 0.0
    d = lambda k: end[k] - start[k]  # noqa: E731
    measured = sum(d(c) for c in CATEGORIES) + d("harness")
    return max(0.0, (d("busy") - measured) / seconds)


def wait_quiet(
    max_wait_s: float, threshold_cores: float = QUIET_CORES, step_s: float = 0.5
) -> float:
    """Wait (at most max_wait_s) until the machine is nearly idle; return the busy cores seen
    last. Used between runs, when nothing this harness measures is running."""
    busy = 0.0
    end = time.monotonic() + max_wait_s
    while True:
        busy = psutil.cpu_percent(interval=step_s) / 100 * (psutil.cpu_count() or 1)
        if busy < threshold_cores or time.monotonic() >= end:
            return busy
