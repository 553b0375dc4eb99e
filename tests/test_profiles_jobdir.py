"""The identity-aware queue on disk: a ``scrapy crawl`` with JOBDIR stopped with
SIGINT mid-way and resumed loses nothing and repeats nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.profiles import session_inflight_max, token, write_profile
from tests.servers import ROOT, SiteServer

SCRAPY = Path(sys.executable).parent / "scrapy"
TOTAL = 60

SPIDER_TEMPLATE = """
import scrapy


class ProfilesSpider(scrapy.Spider):
    name = "profiles"
    custom_settings = {
        "ADDONS": {"scrapy_cdp_pool.Addon": 0},
        "TELNETCONSOLE_ENABLED": False,
        "CDP_POOL_CONNECTIONS": 3,
        "CONCURRENT_REQUESTS": 3,
    }

    async def start(self):
        site, tag = self.settings["SITE"], self.settings["TAG"]
        names = self.settings.getlist("PROFILES")
        for i in range(TOTAL):
            name = names[i % len(names)]
            yield scrapy.Request(f"{site}/session-inflight?ms=60&tag={tag}&i={i}",
                                 meta={"cdp_profile": name}, cb_kwargs={"i": i})

    def parse(self, response, i):
        print(f"ITEM {i}", flush=True)
        yield {"i": i, "profile": response.meta["cdp_profile"]}
"""


def run(spider: Path, settings: dict[str, str], feed: Path, stop_after: int | None) -> str:
    """Run the crawl; with ``stop_after``, send SIGINT once it printed that
    many items. Returns its log (stderr)."""
    argv = [str(SCRAPY), "runspider", str(spider), "-o", str(feed), "-s", "LOG_LEVEL=INFO"]
    for name, value in settings.items():
        argv += ["-s", f"{name}={value}"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stdout is not None
    if stop_after is not None:
        seen = 0
        for line in proc.stdout:
            seen += line.startswith("ITEM ")
            if seen == stop_after:
                proc.send_signal(signal.SIGINT)
                break
    _, log = proc.communicate(timeout=120)
    assert proc.returncode == 0, log[-3000:]
    return log


def test_identity_queue_survives_a_jobdir_stop_and_resume(site: SiteServer, tmp_path: Path) -> None:
    names = [f"job{i}-{token()}" for i in range(3)]
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    for name in names:
        write_profile(profiles, name, session=name)
    spider = tmp_path / "profiles_spider.py"
    spider.write_text(SPIDER_TEMPLATE.replace("TOTAL", str(TOTAL)))
    settings = {
        "JOBDIR": str(tmp_path / "job"), "CDP_POOL_PROFILES_DIR": str(profiles),
        "SITE": site.base, "TAG": token(), "PROFILES": ",".join(names),
    }  # fmt: skip
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    log = run(spider, settings, first, stop_after=10)
    assert "shutting down gracefully" in log
    items = [json.loads(line) for line in first.read_text().splitlines()]
    assert 10 <= len(items) < TOTAL

    log = run(spider, settings, second, stop_after=None)
    assert "Resuming crawl" in log
    resumed = [json.loads(line) for line in second.read_text().splitlines()]
    assert resumed
    done = [item["i"] for item in items + resumed]
    assert sorted(done) == list(range(TOTAL))  # all of them, none twice
    for item in items + resumed:
        assert item["profile"] == names[item["i"] % len(names)]
    for name in names:
        assert session_inflight_max(site, name) == 1
