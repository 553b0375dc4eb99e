"""ItemsFilePipeline: one JSON line per item in ``ITEMS_FILE``, written and
flushed before the item goes on (so a SIGKILL loses none), then ``ITEM`` on
stdout for the test to count."""

from __future__ import annotations

import json
from typing import IO, Any

from scrapy.crawler import Crawler


class ItemsFilePipeline:
    def __init__(self, path: str) -> None:
        self.path = path
        self.file: IO[str] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ItemsFilePipeline:
        return cls(crawler.settings["ITEMS_FILE"])

    def open_spider(self) -> None:
        self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close_spider

    def process_item(self, item: Any) -> Any:
        assert self.file is not None
        self.file.write(json.dumps(dict(item)) + "\n")
        self.file.flush()
        print("ITEM", json.dumps(dict(item)), flush=True)
        return item

    def close_spider(self) -> None:
        if self.file is not None:
            self.file.close()
