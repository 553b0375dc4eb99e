"""What several optional features share and the render path never uses: a disk
error that must stop the crawl (:mod:`~scrapy_cdp_pool.shared.disk_full`), the
memory of the crawl's processes (:mod:`~scrapy_cdp_pool.shared.process_memory`),
and paths shown to users and kept private (:mod:`~scrapy_cdp_pool.shared.paths`).

A layer of its own between the core and the features (pyproject.toml's import
contracts): it may import the core, the core never imports it, and no feature
reaches another feature through it."""
