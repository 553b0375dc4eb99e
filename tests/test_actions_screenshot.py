"""The ``screenshot`` action of an element or a clip, PNG or JPEG with a
quality (issue 18 item 4): the image is decoded (Pillow) and its size and
pixels checked against the test site's ``/act/shot`` box. Lightpanda renders
no pixels: those screenshots are refused there, before the page opens."""

from __future__ import annotations

import io
from typing import Any

import pytest
import pytest_twisted
import scrapy
from PIL import Image

from scrapy_cdp_pool.errors import ActionUnsupported
from tests.crawl import crawl
from tests.profiles import hits, token
from tests.servers import SiteServer
from tests.site.actions import SHOT_BOX, SHOT_COLOUR

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True


async def shots(site: SiteServer, actions: list[Any]) -> list[Image.Image]:
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/shot?{token()}"),
                        meta={"cdp": True, "cdp_actions": actions})],
        {"CDP_POOL_BROWSER": "chromium"},
    )  # fmt: skip
    assert not spider.failures, spider.failures[0].value
    return [Image.open(io.BytesIO(data)) for data in spider.responses[0].meta["cdp_results"]]


def close_to(pixel: Any, colour: tuple[int, int, int], tolerance: int) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], colour, strict=True))


@pytest_twisted.ensureDeferred
async def test_an_element_screenshot_is_the_element(site: SiteServer) -> None:
    [image] = await shots(site, [["screenshot", {"selector": "#box"}]])
    _, _, width, height = SHOT_BOX
    assert image.format == "PNG"
    assert image.size == (width, height)
    rgb = image.convert("RGB")
    for point in [(0, 0), (width // 2, height // 2), (width - 1, height - 1)]:
        assert rgb.getpixel(point) == SHOT_COLOUR, point


@pytest_twisted.ensureDeferred
async def test_a_jpeg_clip_has_the_clip_size_and_its_quality_shows_in_the_bytes(
    site: SiteServer,
) -> None:
    x, y, _, _ = SHOT_BOX
    # 20 px of the white page at its left, then the box.
    clip = {"x": x - 20, "y": y + 10, "width": 120, "height": 80}
    low, high = await shots(site, [
        ["screenshot", {"type": "jpeg", "quality": 10, "clip": clip}],
        ["screenshot", {"type": "jpeg", "quality": 95, "clip": clip}],
    ])  # fmt: skip
    for image in (low, high):
        assert image.format == "JPEG"
        assert image.size == (120, 80)
    rgb = high.convert("RGB")
    assert close_to(rgb.getpixel((5, 40)), (255, 255, 255), 8)
    assert close_to(rgb.getpixel((80, 40)), SHOT_COLOUR, 8)
    # The quality reached the encoder: a lower one quantises more coarsely.
    assert low.quantization[0][0] > high.quantization[0][0]


@pytest.mark.parametrize(
    "options",
    [{"selector": "#box"}, {"clip": {"x": 0, "y": 0, "width": 10, "height": 10}},
     {"type": "jpeg", "quality": 50}],
    ids=["element", "clip", "jpeg"],
)  # fmt: skip
@pytest_twisted.ensureDeferred
async def test_lightpanda_refuses_pixel_screenshots_before_the_page_opens(
    site: SiteServer, options: dict[str, Any]
) -> None:
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/shot?{key}"),
                        meta={"cdp": True, "cdp_actions": [["screenshot", options]]})],
        {"CDP_POOL_BROWSER": "lightpanda", "RETRY_ENABLED": True},
    )  # fmt: skip
    [failure] = spider.failures
    assert isinstance(failure.value, ActionUnsupported), failure.value
    assert "screenshot" in str(failure.value)
    assert hits(site, f"/act/shot?{key}") == 0
