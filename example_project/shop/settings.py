"""Settings for the demo project: Scrapy plus scrapy-cdp-pool, nothing else.

No CDP endpoint is configured, so the plugin starts its embedded
Lightpanda browser by itself.
"""

BOT_NAME = "shop"

SPIDER_MODULES = ["shop.spiders"]
NEWSPIDER_MODULE = "shop.spiders"

ADDONS = {"scrapy_cdp_pool.Addon": 0}

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

ROBOTSTXT_OBEY = False
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
