"""The configurations the benchmark compares, one entry each.

A configuration names its runner script (benchmarks/runners/run_<runner>.py), the server the
harness starts for it (None: no server, or one the crawler embeds), its concurrency, and the
modules it needs (missing ones make it "skipped" with the hint, not failed).
"""

from __future__ import annotations

import fnmatch
import importlib.util
from dataclasses import dataclass

SCRAPY_PLAYWRIGHT_HINT = "pip install scrapy-playwright==0.0.48"


@dataclass(frozen=True)
class Config:
    name: str
    runner: str  # run_<runner>.py
    server: str | None = None  # "lightpanda" | "chromium": started by the harness
    concurrency: int = 4
    args: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()  # importable modules, else skipped
    skip_hint: str = ""
    peer: bool = False  # counts for "ratio to the best peer"
    baseline: bool = False  # plain Scrapy: "ratio to plain Scrapy"
    note: str = ""


def build(connections: int) -> list[Config]:
    c = connections
    sp = {"requires": ("scrapy_playwright",), "skip_hint": SCRAPY_PLAYWRIGHT_HINT, "peer": True}
    configs = [
        Config(
            "plain_scrapy",
            "plain_scrapy",
            concurrency=16,
            baseline=True,
            note="no browser; CONCURRENT_REQUESTS 16",
        ),
        Config(
            "scrapy_floor",
            "scrapy_floor",
            concurrency=16,
            note="no download: each request answered with one stored page (Scrapy's own cost)",
        ),
        Config(
            "cdp_pool_lightpanda",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "lightpanda"),
            note="embedded Lightpanda",
        ),
        Config(
            "cdp_pool_lightpanda_defaults_items16",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "lightpanda", "--defaults", "--concurrent-items", "16"),
            note="embedded Lightpanda at defaults, CONCURRENT_ITEMS 16 (Scrapy's is 100)",
        ),
        Config(
            "scrapy_floor_items16",
            "scrapy_floor",
            concurrency=16,
            args=("--concurrent-items", "16"),
            note="scrapy_floor with CONCURRENT_ITEMS 16",
        ),
        Config(
            "cdp_pool_lightpanda_noshadow",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "lightpanda", "--shadow-roots", "none"),
            note="embedded Lightpanda, CDP_POOL_SHADOW_ROOTS = 'none' (light DOM only)",
        ),
        Config(
            "cdp_pool_lightpanda_nocache",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "lightpanda", "--no-http-cache"),
            note="embedded Lightpanda, CDP_POOL_HTTP_CACHE = False",
        ),
        Config(
            "cdp_pool_lightpanda_defaults",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "lightpanda", "--defaults"),
            note="embedded Lightpanda, CDP_POOL_CONNECTIONS and CONCURRENT_REQUESTS* unset",
        ),
        *(
            Config(
                "cdp_pool_lightpanda_c%d" % n,
                "cdp_pool",
                concurrency=n,
                args=("--browser", "lightpanda"),
                note="embedded Lightpanda, CDP_POOL_CONNECTIONS %d" % n,
            )
            for n in (1, 2, 4, 6, 8)
        ),
        # Issue 19's sweep of connections per endpoint on Chromium (run the
        # harness under `taskset -c 0` / `-c 0,1` for 1 and 2 cores).
        *(
            Config(
                "cdp_pool_chromium_tuned_c%d" % n,
                "cdp_pool",
                concurrency=n,
                args=("--browser", "chromium", "--block", "image,font,media,stylesheet"),
                note="embedded Chromium, resources blocked, CDP_POOL_CONNECTIONS %d" % n,
            )
            for n in (1, 2, 3, 4)
        ),
        Config(
            "cdp_pool_lightpanda_ext",
            "cdp_pool",
            server="lightpanda",
            concurrency=c,
            args=("--browser", "lightpanda"),
            note="CDP_POOL_ENDPOINTS, harness's Lightpanda",
        ),
        Config(
            "cdp_pool_chromium",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "chromium"),
            note="embedded Chromium",
        ),
        Config(
            "cdp_pool_lightpanda_networkidle",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "lightpanda", "--wait-until", "networkidle"),
            note="embedded Lightpanda, CDP_POOL_WAIT_UNTIL networkidle",
        ),
        Config(
            "cdp_pool_chromium_networkidle",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "chromium", "--wait-until", "networkidle"),
            note="embedded Chromium, CDP_POOL_WAIT_UNTIL networkidle",
        ),
        Config(
            "cdp_pool_chromium_tuned",
            "cdp_pool",
            concurrency=c,
            args=("--browser", "chromium", "--block", "image,font,media,stylesheet"),
            note="embedded Chromium, CDP_POOL_BLOCK_RESOURCES as the tuned peer blocks",
        ),
        Config(
            "cdp_pool_chromium_ext",
            "cdp_pool",
            server="chromium",
            concurrency=c,
            args=("--browser", "chromium"),
            note="CDP_POOL_ENDPOINTS, harness's Chromium",
        ),
        Config(
            "scrapy_playwright_chromium_default",
            "scrapy_playwright",
            concurrency=c,
            args=("--mode", "default"),
            note="launches /usr/bin/chromium",
            **sp,
        ),
        Config(
            "scrapy_playwright_chromium_tuned",
            "scrapy_playwright",
            concurrency=c,
            args=("--mode", "tuned"),
            note="resource blocking + flags",
            **sp,
        ),
        Config(
            "scrapy_playwright_lightpanda_c1",
            "scrapy_playwright",
            server="lightpanda",
            concurrency=1,
            args=("--mode", "cdp"),
            note="PLAYWRIGHT_CDP_URL, MAX_PAGES_PER_CONTEXT 1, CONCURRENT_REQUESTS 1",
            **sp,
        ),
    ]
    if c != 1:
        configs.append(
            Config(
                "scrapy_playwright_lightpanda_c%d" % c,
                "scrapy_playwright",
                server="lightpanda",
                concurrency=c,
                args=("--mode", "cdp"),
                note="PLAYWRIGHT_CDP_URL, MAX_PAGES_PER_CONTEXT 1, CONCURRENT_REQUESTS %d" % c,
                **sp,
            )
        )
    configs += [
        Config(
            "raw_playwright_pool",
            "raw_playwright",
            server="lightpanda",
            concurrency=c,
            requires=("playwright",),
            skip_hint="pip install playwright",
            peer=True,
            note="connect_over_cdp x C, fresh context per page",
        ),
        Config(
            "raw_cdp_loop",
            "raw_cdp",
            server="lightpanda",
            concurrency=c,
            requires=("websockets",),
            skip_hint="pip install websockets",
            note="the floor: 9 CDP commands per page, no Playwright",
        ),
    ]
    return configs


def select(configs: list[Config], only: str) -> list[Config]:
    """`only`: comma-separated names or shell patterns (cdp_pool_*); empty: all."""
    if not only:
        return configs
    pats = [p.strip() for p in only.split(",") if p.strip()]
    unknown = [p for p in pats if not any(fnmatch.fnmatch(c.name, p) for c in configs)]
    if unknown:
        raise SystemExit(
            "unknown configuration(s) %s; known: %s"
            % (", ".join(unknown), ", ".join(c.name for c in configs))
        )
    return [c for c in configs if any(fnmatch.fnmatch(c.name, p) for p in pats)]


def missing_requirement(config: Config) -> str:
    """'' when runnable, else the hint (e.g. the pip command)."""
    for mod in config.requires:
        if importlib.util.find_spec(mod) is None:
            return config.skip_hint or "missing module %s" % mod
    return ""
