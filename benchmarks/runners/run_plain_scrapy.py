"""Plain Scrapy over HTTP, no browser: the upper bound. CONCURRENT_REQUESTS 16.

Without a browser the raw HTML of /products and /spa holds the JSON, not the rendered cards or
rows, so for those kinds `valid` is not applicable and the harness reports HTTP 200s instead."""

from __future__ import annotations

import sys

from _common import parser
from _scrapy import crawl

if __name__ == "__main__":
    args = parser(__doc__).parse_args()
    sys.exit(
        crawl(
            args,
            {
                "CONCURRENT_REQUESTS": args.concurrency,
                "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
            },
            meta={},
            raw_html=True,
        )
    )
