"""Command-line tools (``scrapy-cdp-pool``: profiles, cluster operations,
measure, plot; ``scrapy cdp-pool``). Never imported by a crawl, but for
:mod:`.scrapy_command`, which Scrapy's command line imports on every ``scrapy``
command (a ``scrapy.commands`` entry point) and which imports little."""
