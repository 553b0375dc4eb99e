"""The render ladder (docs/ladder.md): each page on the cheapest engine that gets it
right — plain HTTP, then the pool's browser (Lightpanda), then Chromium —
learned per kind of page.

- :mod:`scrapy_cdp_pool.settings.expectation`: what "right" means for a response
  (``meta["cdp_expect"]``, ``CDP_POOL_EXPECT``; outside this package: the
  settings table reads it)
- :mod:`.kind`: the kind of page a request is (host, generalized path, callback)
- :mod:`.learner`: the starting rung per kind, and which requests are re-checked
- :mod:`.store`: where the learned state is kept (JOBDIR, or a cluster's store)
- :mod:`.chromium`: the Chromium pool of the fallback rung, taken on first need
- :mod:`.plain`: the plain HTTP rung's response, decoded for the check
- :mod:`.climb`: the crawler's ladder (one request up its rungs)

Its failure, :class:`~scrapy_cdp_pool.errors.ExpectationNotMet`, is in
:mod:`scrapy_cdp_pool.errors` with the plugin's other exceptions. It is an
optional feature: the add-on registers it on the crawler's runtime, and the
download handler hands it requests with an expectation
(:class:`~scrapy_cdp_pool.core.parts.RenderLadder`); it uses pools, never a
render session itself (the handler fetches for it).
"""
