"""The core: what every crawl runs. The download handler and the one place errors
become Scrapy's, the crawler's runtime (which features plug their parts into),
the request gates and the scheduler queue that consults them, and the Protocols
the optional features implement. It imports the render path, the browser side
and the settings, never an optional feature."""
