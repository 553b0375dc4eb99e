"""The browser side: the CDP client, the servers the plugin starts, the pool of
connections and leases of browser contexts, page reuse, and what each backend
can do. It imports no Scrapy module (an import-linter contract checks it)."""
