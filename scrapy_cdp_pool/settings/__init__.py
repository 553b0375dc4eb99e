"""The ``CDP_POOL_*`` settings: declared once (:mod:`.table`), parsed and checked
(:mod:`.parse`, naming the setting at fault), and read once per crawl into one
frozen :class:`~scrapy_cdp_pool.settings.config.PoolConfig`; with the pure
parsers of setting values (URL patterns, init scripts, signed-out rules,
expectations)."""
