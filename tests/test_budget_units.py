"""ConcurrencyBudget without a crawl: the sharing rules on made-up crawlers,
autoscaling ticks on made-up load samples, limits changed on the fly, and the
settings that build it."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
import scrapy
from scrapy.settings import Settings

from scrapy_cdp_pool import ConcurrencyBudget, PoolConfig
from scrapy_cdp_pool.budget import LoadSample, LoadThresholds
from scrapy_cdp_pool.budget.extension import budget_from_config, pool_capacity
from scrapy_cdp_pool.budget.member import BudgetMember


class Crawler:
    """A stand-in crawler: its requests and the wakes the budget sends it."""

    def __init__(self, budget: ConcurrencyBudget, name: str) -> None:
        self.wakes = 0
        self.member: BudgetMember = budget.attach(name, wake=self._wake)
        self.running: list[scrapy.Request] = []

    def _wake(self) -> None:
        self.wakes += 1

    def pull(self) -> bool:
        """Ask the budget, and start a rendered request if allowed."""
        if not self.member.may_start():
            return False
        request = scrapy.Request(f"https://example.com/{len(self.running)}", meta={"cdp": True})
        self.member.on_dequeued(request, 0.0)
        self.running.append(request)
        return True

    def finish(self) -> None:
        self.member.on_finished(self.running.pop(0))


def fill(*crawlers: Crawler) -> None:
    """Every crawler pulls until the budget says no to all."""
    while True:
        pulled = [c.pull() for c in crawlers]  # each crawler pulls once a round
        if not any(pulled):
            return


def test_total_never_exceeds_max_and_a_late_crawler_gets_the_next_page() -> None:
    budget = ConcurrencyBudget(max=4, autoscale=False)
    alpha = Crawler(budget, "alpha")
    fill(alpha)
    assert alpha.member.in_flight == budget.current == 4
    beta = Crawler(budget, "beta")  # attached late, the budget used up
    assert not beta.pull()
    assert beta.member.waits == 1
    alpha.finish()
    assert beta.wakes == 1  # woken by a page ending elsewhere, not polling
    assert not alpha.pull()  # the freed page is kept for beta, which has none
    assert beta.pull()
    assert (alpha.member.in_flight, beta.member.in_flight, budget.current) == (3, 1, 4)
    for _ in range(20):  # both keep going; the total stays at max
        alpha.finish()
        beta.finish()
        fill(alpha, beta)
        assert budget.current <= 4
        assert alpha.member.in_flight >= 1
        assert beta.member.in_flight >= 1
    assert budget.in_flight_max == 4


def test_each_crawler_keeps_one_page_above_desired_but_never_above_max() -> None:
    budget = ConcurrencyBudget(min=1, max=3, desired=1, autoscale=False)
    crawlers = [Crawler(budget, name) for name in ("a", "b", "c", "d")]
    fill(*crawlers)
    assert [c.member.in_flight for c in crawlers] == [1, 1, 1, 0]
    assert budget.current == 3  # desired 1, but three crawlers are guaranteed a page; max 3
    crawlers[0].finish()
    assert not crawlers[0].pull()  # d waits with none: the page is kept for it
    assert crawlers[3].pull()
    assert [c.member.in_flight for c in crawlers] == [0, 1, 1, 1]


def test_plain_requests_hold_no_page_and_detach_gives_pages_back() -> None:
    budget = ConcurrencyBudget(max=1, autoscale=False)
    alpha = Crawler(budget, "alpha")
    beta = Crawler(budget, "beta")
    plain = scrapy.Request("https://example.com/plain")
    alpha.member.on_dequeued(plain, 0.0)
    assert budget.current == 0
    assert alpha.pull()
    assert not beta.pull()
    budget.detach(alpha.member)  # its spider closed with a page in flight
    assert budget.current == 0
    assert beta.wakes == 1
    assert beta.pull()
    alpha.member.on_finished(alpha.running[0])  # late end of a detached page: ignored
    assert budget.current == 1


def test_a_request_rescheduled_with_its_page_gives_it_back_once() -> None:
    budget = ConcurrencyBudget(max=2, autoscale=False)
    alpha = Crawler(budget, "alpha")
    assert alpha.pull()
    request = alpha.running[0]
    copy_of = request.replace()  # a middleware returned a copy: same meta token
    assert alpha.member.release(copy_of)
    assert not alpha.member.release(copy_of)
    alpha.member.on_finished(request)
    assert budget.current == 0


def test_render_rule_follows_the_handler() -> None:
    budget = ConcurrencyBudget(max=2, autoscale=False)
    member = budget.attach("x", wake=lambda: None, render_all=True)
    assert member.renders(scrapy.Request("https://example.com"))
    assert not member.renders(scrapy.Request("https://example.com", meta={"cdp": False}))
    member = budget.attach("y", wake=lambda: None)
    assert not member.renders(scrapy.Request("https://example.com"))
    assert member.renders(scrapy.Request("https://example.com", meta={"cdp_profile": "alice"}))


def overloaded_memory(n: int = 5) -> list[LoadSample]:
    return [LoadSample(server_memory_mb=50.0, cpu_ratio=0.1, loop_lag_s=0.0)] * n


def busy_and_idle(pages: int, n: int = 5) -> list[LoadSample]:
    return [
        LoadSample(server_memory_mb=50.0, cpu_ratio=0.1, loop_lag_s=0.0, pages_in_flight=pages)
    ] * n


def test_ticks_scale_down_to_min_while_overloaded_and_back_up_when_lifted() -> None:
    budget = ConcurrencyBudget(
        min=2, max=30, thresholds=LoadThresholds(memory_limit_mb=10.0), name="shop"
    )
    while budget.desired > budget.min:
        before = budget.desired
        state = budget.tick(overloaded_memory())
        assert state.overloaded == ("memory",)
        assert state.desired < before
    assert budget.tick(overloaded_memory()).desired == 2  # never below min
    downs = [s.desired for s in budget.states if s.reason == "tick"]
    assert downs[:3] == [28, 26, 24]  # ~5%, at least one page
    budget.thresholds = replace(budget.thresholds, memory_limit_mb=None, memory_share=0.5)
    assert budget.tick(busy_and_idle(pages=0), system_memory_mb=1000.0).desired == 2  # unused
    while budget.desired < budget.max:
        before = budget.desired
        state = budget.tick(busy_and_idle(pages=budget.desired), system_memory_mb=1000.0)
        assert state.overloaded == ()
        assert state.desired > before
    assert budget.tick(busy_and_idle(pages=30)).desired == 30  # never above max
    assert budget.scale_downs == len(downs) - 1
    assert budget.overloaded_ticks == len(downs)


@pytest.mark.parametrize(
    ("sample", "signal"),
    [
        (LoadSample(cpu_ratio=0.99), "cpu"),
        (LoadSample(loop_lag_s=0.5), "loop_lag"),
        (LoadSample(server_memory_mb=600.0), "memory"),  # above 0.5 of 1000 MB
    ],
)
def test_each_signal_overloads_above_its_fraction_of_samples(
    sample: LoadSample, signal: str
) -> None:
    thresholds = LoadThresholds(memory_share=0.5, overloaded_fraction=0.4)
    calm = LoadSample(server_memory_mb=100.0, cpu_ratio=0.1, loop_lag_s=0.0)
    assert thresholds.overloaded([sample, sample, calm, calm, calm], 1000.0) == ()  # 40%
    assert thresholds.overloaded([sample, sample, sample, calm, calm], 1000.0) == (signal,)


def test_unmeasured_signals_never_overload() -> None:
    thresholds = LoadThresholds(memory_limit_mb=1.0)
    assert thresholds.overloaded([LoadSample()] * 5) == ()  # remote server: memory n/a
    assert LoadThresholds().overloaded([LoadSample(server_memory_mb=1e9)]) == ()  # no total


def test_limits_change_while_running_and_wake_waiting_crawlers() -> None:
    budget = ConcurrencyBudget(min=1, max=2, autoscale=False)
    alpha = Crawler(budget, "alpha")
    fill(alpha)
    assert budget.current == 2
    budget.max = 4
    assert alpha.wakes == 1  # it was held back; now there is room
    fill(alpha)
    assert budget.current == 4
    assert budget.desired == 4  # started at max, moved with it
    budget.set_limits(min=1, max=3)
    assert budget.desired == 3
    assert not alpha.pull()
    alpha.finish()
    alpha.finish()
    assert alpha.pull()
    assert not alpha.pull()
    assert budget.current == 3
    assert [s.max for s in budget.states if s.reason == "limits"] == [4, 3]
    budget.min = 3
    assert budget.desired == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min": 0, "max": 2}, "min: 0 is not an integer >= 1"),
        ({"min": 3, "max": 2}, "max: 2 is not an integer >= min (3)"),
        ({"max": 2, "interval_s": 0}, "interval_s: 0 is not a number of seconds > 0"),
    ],
)
def test_invalid_budget_is_refused_by_name(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ConcurrencyBudget(**kwargs)
    budget = ConcurrencyBudget(max=2)
    with pytest.raises(ValueError, match="max: 0 is not an integer >= min"):
        budget.max = 0
    assert budget.max == 2


def test_settings_copies_keep_the_same_instance() -> None:
    budget = ConcurrencyBudget(max=2)
    settings = Settings({"CDP_POOL_BUDGET": budget})
    assert settings.copy()["CDP_POOL_BUDGET"] is budget
    assert copy.deepcopy(budget) is budget
    assert PoolConfig.from_settings(settings.copy()).budget.shared is budget


def config(**values: Any) -> PoolConfig:
    return PoolConfig.from_settings(Settings(values))


def test_budget_settings_defaults_and_values() -> None:
    cfg = config()
    assert (cfg.pool_name, cfg.budget.shared, cfg.budget.autoscale) == (None, None, False)
    assert cfg.budget.interval_s == 10
    assert (cfg.budget.min, cfg.budget.max) == (1, None)
    assert pool_capacity(config(CDP_POOL_CONNECTIONS=3)) == 3
    assert pool_capacity(config(CDP_POOL_CONNECTIONS=3, CDP_POOL_BROWSER="chromium",
                                CDP_POOL_CONTEXTS_PER_CONNECTION=2)) == 6  # fmt: skip
    built = budget_from_config(
        config(
            CDP_POOL_NAME="shop", CDP_POOL_AUTOSCALE=True, CDP_POOL_BUDGET_MIN=2,
            CDP_POOL_CONNECTIONS=5, CDP_POOL_SERVER_MEMORY_LIMIT_MB=500,
            CDP_POOL_AUTOSCALE_CPU_RATIO=0.8, CDP_POOL_AUTOSCALE_LOOP_LAG_SECONDS=0.5,
            CDP_POOL_AUTOSCALE_OVERLOADED_FRACTION=0.2, CDP_POOL_AUTOSCALE_INTERVAL_SECONDS=3,
        ),
        "shop",
    )  # fmt: skip
    assert (built.min, built.max, built.desired, built.interval_s) == (2, 5, 5, 3.0)
    assert built.autoscale
    assert built.thresholds == LoadThresholds(
        memory_limit_mb=500, cpu_ratio=0.8, loop_lag_s=0.5, overloaded_fraction=0.2
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CDP_POOL_NAME", 3, "CDP_POOL_NAME: 3 is not a name"),
        ("CDP_POOL_BUDGET", {"max": 4}, "is not a scrapy_cdp_pool.ConcurrencyBudget instance"),
        ("CDP_POOL_AUTOSCALE", "sometimes", "CDP_POOL_AUTOSCALE: 'sometimes' is not a boolean"),
        ("CDP_POOL_AUTOSCALE_INTERVAL_SECONDS", 0, "seconds > 0"),
        ("CDP_POOL_BUDGET_MIN", 0, "CDP_POOL_BUDGET_MIN: 0 is not an integer >= 1"),
        ("CDP_POOL_BUDGET_MAX", 0, "CDP_POOL_BUDGET_MAX: 0 is not an integer >= 1"),
        ("CDP_POOL_AUTOSCALE_MEMORY_SHARE", 1.5, "is not a number > 0 and <= 1"),
        ("CDP_POOL_AUTOSCALE_CPU_RATIO", 0, "is not a number > 0 and <= 1"),
        ("CDP_POOL_AUTOSCALE_LOOP_LAG_SECONDS", -1, "seconds > 0"),
        ("CDP_POOL_AUTOSCALE_OVERLOADED_FRACTION", 1, "is not a number >= 0 and < 1"),
    ],
)
def test_invalid_budget_settings_are_refused_by_name(name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config(**{name: value})


def test_budget_max_below_min_is_refused() -> None:
    with pytest.raises(ValueError, match=r"CDP_POOL_BUDGET_MAX: 2 is not an integer >= "
                                         r"CDP_POOL_BUDGET_MIN \(3\)"):  # fmt: skip
        config(CDP_POOL_BUDGET_MIN=3, CDP_POOL_BUDGET_MAX=2)
