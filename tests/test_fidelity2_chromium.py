"""Fidelity to plain Scrapy (tests/fidelity2.py) on an embedded Chromium."""

from __future__ import annotations

from tests.fidelity2 import FidelityCases


class TestChromium(FidelityCases):
    browser = "chromium"
