"""A minimal Playwright pool: C connections (connect_over_cdp), each looping
new_context, new_page, goto, evaluate(outerHTML), close context."""

from __future__ import annotations

import asyncio
import collections

from _common import PAGE_TIMEOUT_S, Tally, emit, page_urls, parser, warmup_url
from playwright.async_api import Browser, async_playwright
from playwright.async_api import Error as PlaywrightError

OUTER_HTML = "document.documentElement.outerHTML"


async def render(browser: Browser, url: str) -> str:
    ctx = await browser.new_context()
    try:
        page = await ctx.new_page()
        await page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT_S * 1000)
        return await page.evaluate(OUTER_HTML)
    finally:
        await ctx.close()


async def main() -> None:
    args = parser(__doc__).parse_args()
    tally = Tally(args.kind, args.pages, args.progress_every)
    async with async_playwright() as pw:
        browsers = [
            await pw.chromium.connect_over_cdp(args.endpoint, timeout=10_000)
            for _ in range(args.concurrency)
        ]
        try:
            await render(
                browsers[0], warmup_url(args.base_url, args.kind, args.pages, args.first_page)
            )
            queue = collections.deque(
                page_urls(args.base_url, args.kind, args.pages, args.first_page)
            )
            tally.start()

            async def worker(browser: Browser) -> None:
                while queue:
                    url = queue.popleft()
                    try:
                        tally.page(await render(browser, url))
                    except PlaywrightError as e:
                        tally.error("%s: %s" % (type(e).__name__, str(e).splitlines()[0]))

            await asyncio.gather(*(worker(b) for b in browsers))
        finally:
            tally.result()
            await asyncio.gather(*(b.close() for b in browsers), return_exceptions=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # report, then fail: the harness reads the error line
        emit("error", message="%s: %s" % (type(e).__name__, e))
        raise
