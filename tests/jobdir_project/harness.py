"""Run ``scrapy crawl jobsite`` of this project in a subprocess with a JOBDIR,
stop it (SIGINT) or kill it (SIGKILL) when its own output says so, and read
what it left: items, the JOBDIR's rows, the site's fetch counts."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from scrapy_cdp_pool.jobdir import open_jobdir
from scrapy_cdp_pool.jobdir.queues import deserialize
from tests.servers import SiteServer

PROJECT = Path(__file__).resolve().parent
SCRAPY = Path(sys.executable).parent / "scrapy"
LINE_DEADLINE_S = 120.0  # for the next line of output (the box is shared and slow)
EXIT_DEADLINE_S = 180.0


@dataclass
class Job:
    """One JOBDIR crawled by several runs, over ``total`` pages of the site."""

    site: SiteServer
    directory: Path
    tag: str
    total: int
    hubs: int
    settings: dict[str, str] = field(default_factory=dict)
    runs: int = 0

    def url(self) -> str:
        return self.site.url(f"/jobsite/0?tag={self.tag}&total={self.total}&hubs={self.hubs}")

    def start(self, **settings: str) -> Run:
        self.runs += 1
        return Run(self, self.runs, {**self.settings, **settings})

    def items(self) -> list[dict[str, Any]]:
        """Every item of every run, markers left out."""
        found: list[dict[str, Any]] = []
        for path in sorted(self.directory.glob("items-*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                item = json.loads(line)
                if "hold" not in item:
                    found.append(item)
        return found

    def fetches(self) -> Counter[int]:
        """How many times the site served each page."""
        with urllib.request.urlopen(self.site.url(f"/jobsite/fetches?tag={self.tag}")) as r:
            return Counter({int(n): count for n, count in json.loads(r.read()).items()})

    def stored(self) -> tuple[set[int], set[int]]:
        """Pages of the rows in the JOBDIR: (queued, in flight)."""
        store = open_jobdir(self.directory / "job")
        try:
            queued: set[int] = set()
            in_flight: set[int] = set()
            for row in store.rows():
                n = int(deserialize(row.data, None).url.split("/jobsite/")[1].split("?")[0])
                (in_flight if row.in_flight else queued).add(n)
            return queued, in_flight
        finally:
            store.close()


class Run:
    def __init__(self, job: Job, number: int, settings: dict[str, str]) -> None:
        self.job = job
        self.items_file = job.directory / f"items-{number}.jsonl"
        self.log_file = job.directory / f"log-{number}.txt"
        argv = [str(SCRAPY), "crawl", "jobsite"]
        for name, value in {
            "JOBDIR": str(job.directory / "job"), "JOBSITE_URL": job.url(),
            "JOBSITE_HUBS": str(job.hubs), "ITEMS_FILE": str(self.items_file), **settings,
        }.items():  # fmt: skip
            argv += ["-s", f"{name}={value}"]
        with self.log_file.open("w") as log:
            self.proc = subprocess.Popen(
                argv, cwd=PROJECT, stdout=subprocess.PIPE, stderr=log, text=True
            )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.items: list[dict[str, Any]] = []

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for_item(self, *, count: int | None = None, key: str | None = None) -> None:
        """Until the crawl has written ``count`` items, or an item with ``key``."""
        while not (
            (count is not None and len(self.items) >= count)
            or (key is not None and any(key in item for item in self.items))
        ):
            try:
                line = self._lines.get(timeout=LINE_DEADLINE_S)
            except queue.Empty:
                raise AssertionError(f"no output for {LINE_DEADLINE_S} s; {self.log()}") from None
            if line is None:
                raise AssertionError(f"the crawl ended first: {self.log()}")
            if line.startswith("ITEM "):
                self.items.append(json.loads(line[5:]))

    def kill(self) -> None:
        """SIGKILL, to the crawl's process only; its embedded browser follows
        (it dies with its parent)."""
        children = psutil.Process(self.proc.pid).children(recursive=True)
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=EXIT_DEADLINE_S)
        _, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, f"left running after the kill: {alive}"
        self._close()

    def interrupt(self) -> None:
        """SIGINT (Ctrl-C): Scrapy stops gracefully."""
        self.proc.send_signal(signal.SIGINT)
        self.finish()

    def finish(self) -> None:
        """Wait for the crawl to end by itself; it must exit with status 0."""
        assert self.end() == 0, self.log()

    def end(self) -> int:
        """Wait for the crawl to end by itself; its exit status."""
        self.proc.wait(timeout=EXIT_DEADLINE_S)
        self._close()
        return self.proc.returncode

    def _close(self) -> None:
        self._reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def log(self) -> str:
        return self.log_file.read_text(encoding="utf-8", errors="replace")
