"""Command-line tools (``scrapy-cdp-pool``: profiles, cluster operations,
measure, plot). Never imported by a crawl."""
