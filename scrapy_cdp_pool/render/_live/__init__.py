"""The live page (``meta["cdp_include_page"]``): the rendered page handed to the
callback as a Playwright ``Page``, through a private CDP relay. Private to
:mod:`scrapy_cdp_pool.render`: import its names from there."""
