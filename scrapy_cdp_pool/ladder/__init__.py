"""The render ladder (issue 17): each page on the cheapest engine that gets it
right — plain HTTP, then the pool's browser (Lightpanda), then Chromium —
learned per kind of page.

- :mod:`.settings`: ``CDP_POOL_RENDER``, ``CDP_POOL_FALLBACK``,
  ``CDP_POOL_EXPECT``, ``CDP_POOL_RECHECK_FRACTION``, ``CDP_POOL_LADDER_STORE``
- :mod:`.expectation`: what "right" means for a response (``meta["cdp_expect"]``)
- :mod:`.kind`: the kind of page a request is (host, generalized path, callback)
- :mod:`.learner`: the starting rung per kind, and which requests are re-checked
- :mod:`.store`: where the learned state is kept (JOBDIR, or a cluster's store)
- :mod:`.chromium`: the Chromium pool of the fallback rung, made on first need
- :mod:`.climb`: one request up the ladder
"""

from scrapy_cdp_pool.ladder.errors import ExpectationNotMet

__all__ = ["ExpectationNotMet"]
