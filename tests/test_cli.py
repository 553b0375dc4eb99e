"""The ``scrapy-cdp-pool`` command: ``plot`` on a status file a real crawl
recorded, ``measure`` on an embedded Lightpanda opening test-site pages."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.browser.pool.embedded_server import free_port
from scrapy_cdp_pool.tools.cli import SUBCOMMANDS, build_parser, main
from tests.crawl import crawl
from tests.profiles import MOZILLA_UA, write_profile
from tests.servers import ROOT, SiteServer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONSOLE_SCRIPT = Path(sys.executable).parent / "scrapy-cdp-pool"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


def test_subcommands() -> None:
    assert {"plot", "measure"} <= set(SUBCOMMANDS)
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0


def test_every_command_and_action_says_what_it_does_in_its_own_help() -> None:
    """``--help`` of each subcommand and of each of its actions starts with a
    description (a fresh-user trial found ``profile create``, ``check`` and
    ``list`` showing their usage line only)."""
    import argparse

    def described(parser: argparse.ArgumentParser, path: str) -> list[str]:
        missing = [] if parser.description else [path]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    missing += described(child, f"{path} {name}")
        return missing

    assert described(build_parser(), "scrapy-cdp-pool")[1:] == []  # the top level has its usage


@pytest_twisted.ensureDeferred
async def test_plot_draws_a_recorded_status_file(
    site: SiteServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status_file = tmp_path / "status.jsonl"
    await crawl(
        [scrapy.Request(site.url(f"/js?n=2&plot={i}"), meta={"cdp": True}) for i in range(4)],
        {"CDP_POOL_STATUS_INTERVAL_SECONDS": 0.2, "CDP_POOL_STATUS_FILE": str(status_file)},
    )
    samples = [json.loads(line) for line in status_file.read_text().splitlines()]
    assert len(samples) >= 3  # at start, at idle, at stop

    output = tmp_path / "status.png"
    capsys.readouterr()
    assert main(["plot", str(status_file), "-o", str(output)]) == 0
    assert png_size(output) == (1100, 700)
    assert capsys.readouterr().out.strip() == f"{output}: {len(samples)} samples"

    # A crash can cut the last line short: it is skipped, the rest is drawn.
    with status_file.open("a") as file:
        file.write('{"timestamp": "2026-')
    assert main(["plot", str(status_file)]) == 0
    assert png_size(status_file.with_suffix(".png")) == (1100, 700)
    assert "(1 unreadable lines skipped)" in capsys.readouterr().out


def test_plot_without_samples_fails_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["plot", str(empty), "-o", str(tmp_path / "empty.png")]) == 1
    assert "no status sample" in capsys.readouterr().err
    assert not (tmp_path / "empty.png").exists()
    assert main(["plot", str(tmp_path / "missing.jsonl")]) == 1


@pytest.mark.parametrize("url", ["notaurl", "example.com/x", "ftp://example.com/"])
def test_measure_refuses_a_url_it_cannot_open_before_starting_a_server(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused by argparse, naming the value (before: a browser started and
    the error came from its navigation; fresh-user trial)."""
    with pytest.raises(SystemExit) as exited:
        main(["measure", url])
    assert exited.value.code == 2
    assert f"{url!r} is not an absolute URL" in capsys.readouterr().err


@pytest.mark.parametrize("steps", ["3,1", "0,2", "a,b", ""])
def test_measure_rejects_steps_that_do_not_increase(steps: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["measure", "http://127.0.0.1:1/", "--steps", steps])
    assert exited.value.code == 2


def test_measure_reports_more_memory_for_more_open_pages(site: SiteServer) -> None:
    """The console script, as a user runs it, on an embedded Lightpanda."""
    run = subprocess.run(
        [str(CONSOLE_SCRIPT), "measure", site.url("/js?n=3"), "--steps", "1,3,6",
         "--connections", "1", "--settle", "0", "--timeout", "20", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    steps = report["steps"]
    assert [s["pages"] for s in steps] == [1, 3, 6]
    assert [s["connections"] for s in steps] == [1, 3, 6]  # Lightpanda: one per page
    assert all(s["failed_pages"] == 0 for s in steps)
    memory = [s["server_memory_mb"] for s in steps]
    assert report["idle_mb"] > 0
    assert report["idle_mb"] < memory[0] < memory[1] < memory[2]
    assert report["after_closing_pages_mb"] > 0
    assert report["after_closing_connections_mb"] > 0
    assert report["per_page_mb"] is not None
    assert report["per_connection_mb"] is not None
    assert report["formula"].startswith("server MB ~ ")
    assert "6 pages open, 6 connections" in run.stderr  # progress, one line per reading


def test_measure_refuses_a_site_that_is_down() -> None:
    # Before: every page "not loaded", MB per page reported all the same, exit 0.
    url = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    run = subprocess.run(
        [sys.executable, "-m", "scrapy_cdp_pool.tools.cli", "measure", url,
         "--steps", "2,4", "--connections", "1", "--settle", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith(
        f"scrapy-cdp-pool measure: {url}: navigation failed: no page loaded (2 of 2): "
    )
    assert "MB per open page" not in run.stdout
    assert "pages open" not in run.stdout


def test_measure_prints_a_table_and_the_formula(site: SiteServer) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "scrapy_cdp_pool.tools.cli", "measure", site.url("/js?n=1"),
         "--steps", "1,2", "--connections", "1", "--settle", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("server: lightpanda")
    labels = [line.split("  ")[0] for line in lines[1:6]]
    assert labels == [
        "idle",
        "1 connection, no page",
        "1 page open, 1 connection",
        "2 pages open, 2 connections",
        "after closing the pages",
    ]
    assert lines[6].startswith("after closing the connections")
    assert lines[-4].startswith("MB per connection (no page): ")
    assert lines[-3].startswith("MB per open page: ")
    assert lines[-2].startswith("server MB ~ ")
    assert lines[-1].startswith("e.g. 2 pages on 2 connections ~ ")


def test_measure_opens_pages_as_a_stored_profile(site: SiteServer, tmp_path: Path) -> None:
    """``--profile``: every page carries the profile's cookies (the site counts
    requests per session cookie); a profile the server cannot honour is
    refused by name."""
    session = f"measure-{uuid.uuid4().hex[:8]}"
    write_profile(tmp_path, "shopper", session=session)
    write_profile(tmp_path, "tokyo", session=f"{session}-tz", identity={"timezoneId": "Asia/Tokyo"})
    write_profile(tmp_path, "moz", session="m", identity={"userAgent": MOZILLA_UA})
    base = [str(CONSOLE_SCRIPT), "measure", site.url("/session-inflight?ms=1"), "--steps", "2",
            "--connections", "1", "--settle", "0", "--timeout", "20", "--json",
            "--profiles-dir", str(tmp_path)]  # fmt: skip
    run = subprocess.run(
        [*base, "--profile", "shopper"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["steps"][0]["failed_pages"] == 0
    assert site.stats()["inflight_max"][f"session:{session}"] >= 1
    # A time zone: the embedded Lightpanda is started with it, as a crawl's
    # dedicated server would be.
    zoned = subprocess.run(
        [*base, "--profile", "tokyo"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert zoned.returncode == 0, zoned.stderr
    assert json.loads(zoned.stdout)["steps"][0]["failed_pages"] == 0
    assert site.stats()["inflight_max"][f"session:{session}-tz"] >= 1
    refused = subprocess.run(
        [*base, "--profile", "moz"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "profile 'moz' needs user_agent_mozilla" in refused.stderr
