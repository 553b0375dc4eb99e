"""The add-on, and a pipeline that writes each item at once (the tests read the
items of a crawl they killed). Per-run values come from ``-s``: ``JOBDIR``,
``JOBSITE_URL``, ``ITEMS_FILE``, ``PROFILES``, ``HOLD_HUB``,
``CDP_POOL_PROFILES_DIR``, ``SPY_FILE``."""

BOT_NAME = "jobsite_crawl"
SPIDER_MODULES = ["jobsite_crawl.spiders"]

ADDONS = {"scrapy_cdp_pool.Addon": 0}
ITEM_PIPELINES = {"jobsite_crawl.pipelines.ItemsFilePipeline": 100}

ROBOTSTXT_OBEY = False
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
CONCURRENT_REQUESTS = 4
CDP_POOL_CONNECTIONS = 4
CDP_POOL_STATUS_INTERVAL_SECONDS = 600
EXTENSIONS = {"jobsite_crawl.spies.Spy": 0}  # only with SPY_FILE (the cluster storm test)
