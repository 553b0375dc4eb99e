"""Telemetry: the engine, the scraper and the CDP server's memory side by side
(log lines, JSON lines, stats, a plot), the memory guard, and sizing."""

from scrapy_cdp_pool.shared.process_memory import TreeMemory, process_tree_memory
from scrapy_cdp_pool.telemetry.extension import EngineStatusExtension
from scrapy_cdp_pool.telemetry.memory_guard import MemoryGuard
from scrapy_cdp_pool.telemetry.sample import StatusSample

__all__ = [
    "EngineStatusExtension",
    "MemoryGuard",
    "StatusSample",
    "TreeMemory",
    "process_tree_memory",
]
