"""One page in one browser context and what its CDP events say: the page and its
opening, the main frame's document, the answers to its ``Fetch`` pauses, and the
watchers beside them (capture, console, dialogs, frames, network idle, schemes).
Private to :mod:`scrapy_cdp_pool.render`: import its names from there."""
