"""Run one configuration once: start its server, run its runner as a subprocess, read the
runner's BENCH lines with a deadline, measure the process trees, stop everything it started.
It never raises for a configuration's own failure: that becomes a result with an error."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import measure
import procs
from configs import Config

RUNNERS = Path(__file__).resolve().parent / "runners"
REPO_ROOT = RUNNERS.parents[1]


@dataclass
class RunResult:
    config: str
    kind: str
    run: int
    status: str = "failed"  # ok | failed | skipped
    error: str = ""
    pages: int = 0
    valid: int | None = None  # None: markers do not apply (plain HTTP, JS pages)
    ok: int = 0  # HTTP 200 responses
    errors: int = 0
    seconds: float = 0.0
    pages_per_s: float = 0.0
    cpu_ms_per_page: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    peak_pss_mb: dict[str, float | None] = field(default_factory=dict)
    other_load_cores: float | None = None  # CPU used by unmeasured processes in the window
    wall_s: float = 0.0
    log: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def _start_server(kind: str | None, log_dir: Path) -> procs.Managed | None:
    if kind is None:
        return None
    if kind == "lightpanda":
        return procs.start_lightpanda(log_dir)
    if kind == "chromium":
        return procs.start_chromium(log_dir)
    if kind == "chromium_shell":
        return procs.start_chromium(log_dir, binary=procs.CHROMIUM_SHELL)
    raise ValueError("unknown server kind %r" % kind)


def _reader(stream, out: queue.Queue) -> None:
    try:
        for line in stream:
            out.put(line)
    finally:
        out.put(None)


def run_config(
    cfg: Config,
    kind: str,
    run: int,
    *,
    site: procs.Managed,
    pages: int,
    log_dir: Path,
    timeout_s: float,
    first_page: int = 1,
    progress_every: int = 0,
    on_progress: Callable[[dict, measure.TreeSampler], None] | None = None,
) -> RunResult:
    res = RunResult(cfg.name, kind, run)
    t_start = time.monotonic()
    server = runner = None
    marks: dict[str, dict[str, float]] = {}
    result: dict = {}
    try:
        server = _start_server(cfg.server, log_dir)
        argv = [
            sys.executable,
            str(RUNNERS / ("run_%s.py" % cfg.runner)),
            "--base-url",
            site.http_url,
            "--kind",
            kind,
            "--pages",
            str(pages),
            "--concurrency",
            str(cfg.concurrency),
            "--first-page",
            str(first_page),
            "--progress-every",
            str(progress_every),
            *cfg.args,
        ]
        if server is not None:
            argv += ["--endpoint", server.http_url]
        log_path = log_dir / ("%s-%s-r%d.log" % (cfg.name, kind, run))
        res.log = str(log_path)
        with open(log_path, "wb") as log:
            runner = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=str(REPO_ROOT),
                start_new_session=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
                text=True,
            )
        lines: queue.Queue = queue.Queue()
        threading.Thread(
            target=_reader, args=(runner.stdout, lines), daemon=True, name="runner-stdout"
        ).start()
        deadline = time.monotonic() + timeout_s
        with measure.TreeSampler(runner.pid, server.pid if server else None, site.pid) as sampler:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    res.error = res.error or "timeout after %.0f s" % timeout_s
                    break
                try:
                    line = lines.get(timeout=min(left, 1.0))
                except queue.Empty:
                    continue
                if line is None:
                    break
                if not line.startswith("BENCH "):
                    continue
                try:
                    ev = json.loads(line[6:])
                except ValueError:
                    continue
                name = ev.get("event")
                if name in ("start", "end"):
                    marks[name] = sampler.mark()
                elif name == "error" and not res.error:
                    res.error = ev.get("message", "")
                elif name == "progress" and on_progress is not None:
                    on_progress(ev, sampler)
                elif name == "result":
                    result = ev
            try:
                runner.wait(timeout=max(1.0, min(30.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                res.error = res.error or "runner did not exit"
            peaks = sampler.peaks_mb()
        res.peak_rss_mb, res.peak_pss_mb = peaks["rss"], peaks["pss"]
        if runner.returncode not in (0, None) and not res.error:
            res.error = "exit code %s: %s" % (runner.returncode, _tail(log_path))
    except (procs.StartError, OSError) as e:
        res.error = "%s: %s" % (type(e).__name__, e)
    finally:
        if runner is not None:
            procs.stop(procs.Managed("runner", runner, Path(res.log)), grace_s=10)
        procs.stop(server)
    res.wall_s = round(time.monotonic() - t_start, 2)
    _fill(res, result, marks)
    return res


def _tail(path: Path, n: int = 400) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    return " | ".join(text[-n:].splitlines()[-3:])


def _fill(res: RunResult, result: dict, marks: dict[str, dict[str, float]]) -> None:
    if result:
        res.pages = result.get("pages", 0)
        res.valid = result.get("valid")
        res.ok = result.get("ok", 0)
        res.errors = result.get("errors", 0)
        res.seconds = result.get("seconds", 0.0)
        res.pages_per_s = result.get("pages_per_s", 0.0)
        if result.get("first_error") and not res.error:
            res.error = result["first_error"]
    if "start" in marks and "end" in marks and res.pages:
        cpu = measure.cpu_delta(marks["start"], marks["end"])
        res.cpu_ms_per_page = {c: round(v * 1000 / res.pages, 2) for c, v in cpu.items()}
        res.other_load_cores = round(measure.other_load(marks["start"], marks["end"]), 2)
        res.status = "ok"
    elif not res.error:
        res.error = "the runner did not finish its pages"
