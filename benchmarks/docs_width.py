"""How wide each page of the built HTML docs is in a 1280 px wide window
(``document.documentElement.scrollWidth``): a page wider than the window
scrolls sideways. Issue 40, item 7 found 7 of 21 wider (api 1687 px,
settings 1393 px); docs/_static/wrap.css wraps long tables and code.

Usage (build the docs first)::

    sphinx-build -q -b html docs /tmp/docs-html
    python benchmarks/docs_width.py /tmp/docs-html [--width 1280]

Prints one line a page (width in px, page) and exits 1 when any page is wider
than the window. Uses Playwright's Python package with Debian's headless
shell (``/usr/lib/chromium/chromium-headless-shell``, ``BENCH_CHROMIUM`` to
change it); no network (``file://`` pages).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

SHELL = os.environ.get("BENCH_CHROMIUM", "/usr/lib/chromium/chromium-headless-shell")


def widths(directory: Path, width: int) -> dict[str, int]:
    """Each top-level page's scroll width in px, by file name."""
    found: dict[str, int] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=SHELL)
        page = browser.new_page(viewport={"width": width, "height": 900})
        for path in sorted(directory.glob("*.html")):
            page.goto(path.resolve().as_uri())
            found[path.name] = int(page.evaluate("document.documentElement.scrollWidth"))
        browser.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="the built HTML docs")
    parser.add_argument("--width", type=int, default=1280, help="window width, px")
    args = parser.parse_args()
    found = widths(args.directory, args.width)
    for name, px in found.items():
        print(f"{px:6d}  {name}{'  WIDER' if px > args.width else ''}")
    wider = [name for name, px in found.items() if px > args.width]
    print(f"{len(wider)} of {len(found)} pages wider than {args.width} px")
    return 1 if wider else 0


if __name__ == "__main__":
    sys.exit(main())
