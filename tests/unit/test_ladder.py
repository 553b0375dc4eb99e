"""The render ladder's parts without a browser, a site or a crawl: expectations, page kinds, the
learner's rules, the settings' errors and the JOBDIR store (issue 17)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.ladder.kind import generalize_path, page_kind
from scrapy_cdp_pool.ladder.learner import KindState, Learner
from scrapy_cdp_pool.ladder.store import JobdirLadderStore
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.settings.expectation import parse_expectation

RUNGS = ("http", "lightpanda", "chromium")


def page(body: str) -> HtmlResponse:
    return HtmlResponse("https://example.test/", body=body.encode(), encoding="utf-8")


def has_price(response: Response) -> bool:
    """A predicate for the tests (imported by path)."""
    return b"price" in response.body


def test_each_form_of_expectation() -> None:
    three = page("<ul><li>a</li><li>b</li><li>c</li></ul><p class=price>1</p>")
    assert parse_expectation("li", "X").unmet(three) is None
    assert parse_expectation({"css": "li", "min": 3}, "X").unmet(three) is None
    assert parse_expectation({"css": "li", "min": 4}, "X").unmet(three) == "'li' x4 matched 3"
    predicate = {"predicate": f"{__name__}.has_price"}
    assert parse_expectation(predicate, "X").unmet(three) is None
    both = parse_expectation(["p.price", predicate], "X")
    assert both.unmet(page("<p>none</p>")) == "'p.price' matched 0"
    assert "not a text response" in (
        parse_expectation("li", "X").unmet(Response("https://e.t/")) or ""
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("li..x", "is not a valid CSS selector"),
        ({"css": "li", "min": 0}, "'min' = 0 is not a count >= 1"),
        ({"predicate": "tests.nowhere.f"}, "does not import"),
        ({"predicate": "tests.unit.test_ladder.RUNGS"}, "is not callable"),
        ({"xpath": "//li"}, "is not a check"),
        ([], "an empty list"),
        (3, "3 is not a check"),
    ],
)
def test_a_bad_expectation_is_named_with_what_is_allowed(value: object, says: str) -> None:
    with pytest.raises(ValueError, match="CDP_POOL_EXPECT = ") as info:
        parse_expectation(value, "CDP_POOL_EXPECT")
    assert says in str(info.value)
    assert "allowed: a CSS selector" in str(info.value)


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"CDP_POOL_RENDER": "always"}, "CDP_POOL_RENDER: 'always' is not allowed; use one of"),
        ({"CDP_POOL_FALLBACK": "firefox"}, "CDP_POOL_FALLBACK: 'firefox' is not allowed; use one"),
        (
            {"CDP_POOL_FALLBACK": "chromium", "CDP_POOL_BROWSER": "chromium"},
            "renders on Chromium already; use None, or CDP_POOL_BROWSER = 'lightpanda'",
        ),
        ({"CDP_POOL_RECHECK_FRACTION": 1.5}, "CDP_POOL_RECHECK_FRACTION: 1.5 is not a number >="),
        ({"CDP_POOL_RECHECK_FRACTION": "x"}, "CDP_POOL_RECHECK_FRACTION: 'x' is not a number"),
        ({"CDP_POOL_EXPECT": {"css": ""}}, "CDP_POOL_EXPECT = {'css': ''}: '' is not a CSS"),
        ({"CDP_POOL_LADDER_STORE": 3}, "CDP_POOL_LADDER_STORE: 3 is not a callable"),
    ],
)
def test_a_bad_ladder_setting_is_refused_by_name(settings: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=r"^CDP_POOL_") as info:
        PoolConfig.from_settings(Settings(settings))
    assert says in str(info.value)


def test_page_kinds_generalize_numbers_and_ids() -> None:
    assert generalize_path("/product/1234/reviews") == "/product/{n}/reviews"
    assert generalize_path("/item-12.html") == "/item-{n}.html"
    assert generalize_path("/u/3f2a9c81d0e4") == "/u/{id}"
    assert generalize_path("/o/123e4567-e89b-12d3-a456-426614174000/x") == "/o/{id}/x"
    assert generalize_path("/s/AbCdEf0123456789xyz") == "/s/{id}"
    assert generalize_path("/category/electronics") == "/category/electronics"

    def parse_reviews(response: Response) -> None: ...

    request = scrapy.Request("https://Shop.test/product/9/reviews?page=2", callback=parse_reviews)
    assert page_kind(request) == "shop.test/product/{n}/reviews parse_reviews"
    assert page_kind(scrapy.Request("https://shop.test/")) == "shop.test/ parse"


def test_the_learner_moves_up_on_a_climb_and_down_on_a_met_recheck() -> None:
    changes: list[tuple[str, str | None, str]] = []
    learner = Learner(RUNGS, 0.5, on_change=lambda k, old, new, why: changes.append((k, old, new)))
    assert learner.plan("k") == (0, False)  # never seen: the lowest rung
    learner.record("k", 0, 2, recheck=False)
    assert learner.start_of("k") == 2
    assert learner.plan("k") == (2, False)  # k=1: floor(0.5) = 0
    assert learner.plan("k") == (1, True)  # k=2: floor(1.0) = 1, one rung lower
    learner.record("k", 1, 2, recheck=True)  # not met there: stays
    assert learner.start_of("k") == 2
    learner.record("k", 1, 1, recheck=True)  # met there: down
    assert learner.start_of("k") == 1
    learner.record("k", 2, 2, recheck=False)  # planned before the move: no change
    assert learner.start_of("k") == 1
    learner.record("k", 1, None, recheck=False)  # met nowhere: no change
    assert changes == [("k", None, "chromium"), ("k", "chromium", "lightpanda")]


@pytest.mark.parametrize(("fraction", "n"), [(0.1, 100), (0.25, 7), (0.3, 50), (1.0, 5), (0.0, 9)])
def test_rechecks_are_exactly_floor_n_times_the_fraction(fraction: float, n: int) -> None:
    learner = Learner(RUNGS, fraction, {"k": KindState("chromium")})
    rechecks = sum(learner.plan("k")[1] for _ in range(n))
    assert rechecks == int(n * fraction + 1e-9)


def test_no_recheck_below_the_lowest_rung_a_request_may_use() -> None:
    learner = Learner(RUNGS, 1.0, {"k": KindState("lightpanda")})
    assert learner.plan("k", lowest=1) == (1, False)  # plain HTTP cannot serve it
    assert learner.plan("k") == (0, True)


def test_a_rung_gone_from_the_ladder_starts_on_the_highest_left() -> None:
    learner = Learner(("http", "lightpanda"), 0.1, {"k": KindState("chromium", 4)})
    assert learner.start_of("k") == 1


def test_the_jobdir_store_round_trips_privately(tmp_path: Path) -> None:
    store = JobdirLadderStore(tmp_path)
    assert store.load() == {}
    store.save({"a/{n} parse": KindState("chromium", 3)})
    assert store.load() == {"a/{n} parse": KindState("chromium", 3)}
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["cdp_pool_ladder.json"]
    store.path.write_text("{not json")
    with pytest.raises(ValueError, match=r"cdp_pool_ladder\.json: not a render ladder state"):
        store.load()


def test_the_addon_refuses_a_bad_ladder_setting_and_a_missing_fallback_browser() -> None:
    with pytest.raises(ValueError, match="CDP_POOL_RENDER: 'always' is not allowed"):
        Addon().update_settings(Settings({"CDP_POOL_RENDER": "always"}))
    missing = {"CDP_POOL_FALLBACK": "chromium", "CDP_POOL_CHROMIUM_PATH": "/nonexistent/chromium"}
    with pytest.raises(ValueError, match="CDP_POOL_CHROMIUM_PATH: '/nonexistent/chromium'"):
        Addon().update_settings(Settings(missing))
    Addon().update_settings(Settings({"CDP_POOL_FALLBACK": "chromium"}))


@pytest.mark.parametrize(
    ("given", "means"),
    [
        ('{"css": "li", "min": 3}', "'li' x3"),
        ('["p.price", {"css": "li", "min": 2}]', "'p.price' and 'li' x2"),
        ("[data-id]", "'[data-id]'"),
        ("li.item", "'li.item'"),
    ],
)
def test_an_expectation_given_on_the_command_line_as_json_is_read_as_json(
    given: str, means: str
) -> None:
    """``-s CDP_POOL_EXPECT='{"css": "li", "min": 3}'`` is a string: read as
    JSON, as Scrapy reads dict and list settings given so (it was taken for a
    CSS selector and refused as one); a selector that is not JSON stays one."""
    config = PoolConfig.from_settings(Settings({"CDP_POOL_EXPECT": given}))
    assert config.ladder.expect is not None
    assert config.ladder.expect.describe() == means
