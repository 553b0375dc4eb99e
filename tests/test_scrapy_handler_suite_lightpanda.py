"""Scrapy's own download-handler tests, every request rendered on the embedded
Lightpanda (see tests/scrapy_suite/)."""

from __future__ import annotations

from tests.scrapy_suite.suite import (  # noqa: F401 - fixtures
    FILTERWARNINGS,
    _mitm_proxies,
    lightpanda_settings,
    mockserver,
    proxy_server,
    suite_classes,
)

# Lightpanda refuses a response with a header line without a colon
# ("WeirdServerReply"), as Scrapy's httpx handler does (its flag: "fail").
globals().update(
    suite_classes("lightpanda", "lightpanda_settings", handler_bad_header_handling="fail")
)

pytestmark = FILTERWARNINGS
