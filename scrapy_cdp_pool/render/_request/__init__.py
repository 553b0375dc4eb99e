"""The run of one rendered request: what it asks (its spec, context options and
proxy), the render itself, and what it gives back (the response, redirects,
cookies, storage state, user agent, failure snapshots). Private to
:mod:`scrapy_cdp_pool.render`: import its names from there."""
