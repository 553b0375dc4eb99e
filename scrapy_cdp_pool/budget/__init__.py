"""One autoscaled concurrency budget shared by several crawlers: the pages in
flight across all of them stay under one bound, scaled by the load."""

from scrapy_cdp_pool.budget.budget import ConcurrencyBudget
from scrapy_cdp_pool.budget.load import LoadSample, LoadThresholds
from scrapy_cdp_pool.budget.registry import budget_for
from scrapy_cdp_pool.budget.scaling import BudgetState

__all__ = [
    "BudgetState",
    "ConcurrencyBudget",
    "LoadSample",
    "LoadThresholds",
    "budget_for",
]
