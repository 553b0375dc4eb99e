"""Fidelity to plain Scrapy (tests/fidelity2.py) on the embedded Lightpanda."""

from __future__ import annotations

from tests.fidelity2 import FidelityCases


class TestLightpanda(FidelityCases):
    browser = "lightpanda"
