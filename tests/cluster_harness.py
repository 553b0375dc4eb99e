"""Cluster workers: ``scrapy crawl`` of the JOBDIR tests' project
(``tests/jobdir_project``) in subprocesses, each with
``CDP_POOL_CLUSTER_REDIS_URL`` pointing at a real Redis (``tests/redis_server.py``,
whose :class:`RedisServer` and ``REDIS_SERVER`` are also importable from here)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar, Self

import psutil

from tests.jobdir_project.harness import EXIT_DEADLINE_S, LINE_DEADLINE_S, PROJECT, Job
from tests.profiles import token, write_profile
from tests.redis_server import REDIS_SERVER, RedisServer
from tests.servers import SiteServer

__all__ = ["REDIS_SERVER", "RedisServer"]  # re-exported: the cluster tests' one Redis

SCRAPY = Path(sys.executable).parent / "scrapy"


class Worker:
    """One ``scrapy crawl <spider>`` of the cluster crawl. Those still running
    when a test ends are killed by :func:`kill_left`."""

    started: ClassVar[list[Worker]] = []

    def __init__(
        self, directory: Path, number: int, redis_url: str, settings: dict[str, str],
        spider: str = "jobsite",
    ) -> None:  # fmt: skip
        self.number = number
        self.items_file = directory / f"items-{number}.jsonl"
        self.log_file = directory / f"log-{number}.txt"
        argv = [str(SCRAPY), "crawl", spider]
        for name, value in {
            "CDP_POOL_CLUSTER_REDIS_URL": redis_url, "ITEMS_FILE": str(self.items_file),
            **settings,
        }.items():  # fmt: skip
            argv += ["-s", f"{name}={value}"]
        with self.log_file.open("w") as log:
            self.proc = subprocess.Popen(
                argv, cwd=PROJECT, stdout=subprocess.PIPE, stderr=log, text=True
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        Worker.started.append(self)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def kill(self) -> None:
        """SIGKILL, to the crawl's process; its embedded browser dies with it."""
        children = psutil.Process(self.proc.pid).children(recursive=True)
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=EXIT_DEADLINE_S)
        _, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, f"left running after the kill: {alive}"
        self._close()

    def interrupt(self) -> None:
        """SIGINT (Ctrl-C once): the worker stops cleanly; exit status 0."""
        self.proc.send_signal(signal.SIGINT)
        self.finish()

    def finish(self) -> None:
        """Wait for the crawl to end by itself, with status 0."""
        self.proc.wait(timeout=EXIT_DEADLINE_S)
        self._close()
        assert self.proc.returncode == 0, self.log()
        text = self.log_file.read_text(encoding="utf-8", errors="replace")
        assert "Traceback" not in text, text[text.index("Traceback") - 2000 :][:5000]

    def _close(self) -> None:
        self._reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def items(self) -> list[dict[str, Any]]:
        if not self.items_file.exists():
            return []
        lines = self.items_file.read_text(encoding="utf-8").splitlines()
        return [item for item in map(json.loads, lines) if "hold" not in item]

    def stat(self, name: str) -> int:
        """A stat from the crawl's final stats dump (0 when absent)."""
        text = self.log_file.read_text(encoding="utf-8", errors="replace")
        marker = f"'{name}': "
        at = text.rfind(marker)
        if at < 0:
            return 0
        return int(text[at + len(marker) :].split(",", 1)[0].split("}", 1)[0])

    def log(self) -> str:
        return self.log_file.read_text(encoding="utf-8", errors="replace")[-5000:]


def kill_left() -> None:
    """SIGKILL the workers still running (a failed test), and forget them all."""
    for worker in Worker.started:
        if worker.proc.poll() is None:
            worker.kill()
    Worker.started.clear()


def wait_for_item(workers: list[Worker], key: str | None = None, count: int = 1) -> Worker:
    """Until one worker printed an item with ``key`` (or the workers together
    ``count`` items); that worker (the last to print)."""
    seen = 0
    while True:
        for worker in workers:
            try:
                line = worker.lines.get(timeout=LINE_DEADLINE_S / 60 / len(workers))
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"worker {worker.number} ended first: {worker.log()}")
            if line.startswith("ITEM "):
                seen += 1
                item = json.loads(line[5:])
                if (key is not None and key in item) or (key is None and seen >= count):
                    return worker


def all_items(workers: list[Worker]) -> Counter[int]:
    return Counter(item["n"] for worker in workers for item in worker.items())


def lease_trail(workers: list[Worker]) -> str:
    """Each worker's log lines about leases and Redis outages, with the
    pages it printed twice: what a failed "every page once" needs to say
    which worker redid what, and why."""
    said = []
    for worker in workers:
        twice = sorted(
            n for n, times in Counter(i["n"] for i in worker.items()).items() if times > 1
        )
        log = worker.log_file.read_text(encoding="utf-8", errors="replace")
        lines = [
            line for line in log.splitlines()
            if any(word in line for word in ("lease", "cannot serve", "closing (", "requeued"))
        ]  # fmt: skip
        said.append(f"worker {worker.number}: pages twice {twice}\n" + "\n".join(lines[-40:]))
    return "\n".join(said)


def cluster(redis_url: str, name: str, **extra: Any) -> dict[str, Any]:
    """Settings of an in-process worker of cluster crawl ``name`` on the
    Redis at ``redis_url``, every request rendered, plus ``extra``."""
    return {"CDP_POOL_CLUSTER_REDIS_URL": redis_url, "CDP_POOL_CLUSTER_NAME": name,
            "CDP_POOL_RENDER_ALL": True, **extra}  # fmt: skip


class WorkerProcesses:
    """``python -m tests.cluster_worker`` processes (one per URL list, the
    same ``settings``) started together; used as a context manager, the ones
    still running at its end are killed. :meth:`answers` waits for each and
    returns its final JSON line (``{"stats": ..., "failures": N}``)."""

    def __init__(self, settings: dict[str, Any], url_lists: list[list[str]]) -> None:
        root = Path(__file__).resolve().parent.parent
        self.processes = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.cluster_worker", json.dumps(settings), *urls],
                cwd=root,
                stdout=subprocess.PIPE,
                text=True,
            )
            for urls in url_lists
        ]

    def answers(self, deadline_s: float) -> list[dict[str, Any]]:
        return [
            json.loads(p.communicate(timeout=deadline_s)[0].splitlines()[-1])
            for p in self.processes
        ]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.processes:
            if p.poll() is None:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()


def jobsite_job(
    site: SiteServer, directory: Path, pages: int = 300, identities: int = 12, hubs: int = 5,
) -> Job:  # fmt: skip
    """The cluster crawl of ``/jobsite``: ``pages`` pages, leaves sent as
    ``identities`` profiles (written to ``directory``/profiles)."""
    profiles = directory / "profiles"
    profiles.mkdir()
    tag = token()
    names = [f"id{i}-{tag}" for i in range(identities)]
    for name in names:
        write_profile(profiles, name, session=f"s-{name}")
    return Job(
        site, directory, tag, total=pages, hubs=hubs,
        settings={
            "PROFILES": ",".join(names), "CDP_POOL_PROFILES_DIR": str(profiles),
            "JOBSITE_HUBS": str(hubs), "CDP_POOL_CLUSTER_NAME": f"jobsite-{tag}",
            "START_DONT_FILTER": "True", "CONCURRENT_REQUESTS": "4",
            "CDP_POOL_CONNECTIONS": "2",
        },
    )  # fmt: skip
