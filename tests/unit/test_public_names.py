"""The dotted paths users write keep working (issue 28: moves and renames
keep public names)."""

from __future__ import annotations

import importlib

import scrapy_cdp_pool
from scrapy_cdp_pool.addon import PRIORITY_QUEUE


def test_every_exported_name_imports() -> None:
    for name in scrapy_cdp_pool.__all__:
        assert getattr(scrapy_cdp_pool, name) is not None, name


def test_the_priority_queues_earlier_name_is_the_same_class() -> None:
    # Settings written before the rename name the queue IdentityAwarePriorityQueue.
    module = importlib.import_module("scrapy_cdp_pool.core.queue")
    assert module.IdentityAwarePriorityQueue is module.ProfileAwarePriorityQueue
    assert scrapy_cdp_pool.IdentityAwarePriorityQueue is scrapy_cdp_pool.ProfileAwarePriorityQueue
    path, _, name = PRIORITY_QUEUE.rpartition(".")
    assert getattr(importlib.import_module(path), name) is module.ProfileAwarePriorityQueue
