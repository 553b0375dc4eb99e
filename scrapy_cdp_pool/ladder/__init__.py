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

Its layer is between the runtime (which makes the crawler's ladder) and the
render: it uses pools, never a render session itself (the handler fetches
for it).
"""

from scrapy_cdp_pool.errors import ExpectationNotMet, RungResult

__all__ = ["ExpectationNotMet", "RungResult"]
