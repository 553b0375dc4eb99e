"""Page actions (``meta["cdp_actions"]``): the allow-list with its parsing and
argument checks, and the steps that run them (elements, trusted input, waits,
screenshots). Private to :mod:`scrapy_cdp_pool.render`: import its names from
there."""
