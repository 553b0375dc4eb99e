"""Sphinx configuration of scrapy-cdp-pool's reference documentation.

Built in CI with warnings as errors (the README's test command):
``sphinx-build -W --keep-going -q -b html docs docs/_build/html``. Pages are Markdown (MyST), so a
section moves between the README and the reference without rewriting.
"""

project = "scrapy-cdp-pool"
author = "scrapy-cdp-pool contributors"
copyright = "2026, scrapy-cdp-pool contributors"

extensions = ["myst_parser", "sphinx.ext.autodoc"]

# The API reference (api.md) is built from the docstrings of the installed package.
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # Scrapy's own docstrings use its own roles
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build"]

# Headings become link targets as on GitHub: "[Profiles](profiles.md#files)" works.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

html_theme = "alabaster"
html_title = "scrapy-cdp-pool"
# Long tables, code and signatures wrap or scroll in their box, so that no page is
# wider than a 1280 px window (benchmarks/docs_width.py checks the built pages).
html_static_path = ["_static"]
html_css_files = ["wrap.css"]
# The page fills the window (alabaster's default is a fixed 940 px, its body at most
# 800 px): the wide tables (settings, resilience, cluster) get the room there is.
html_theme_options = {"page_width": "auto", "body_max_width": "none"}
