"""A small demo shop whose content only exists once JavaScript has run.

Served with the standard library alone, on 127.0.0.1 and a free port, in a
daemon thread. Pages:

- ``/``: the same as ``/products?page=1``;
- ``/products?page=N`` (N = 1..4): five products per page and, except on
  the last page, an ``a.next`` link;
- ``/product/<id>`` (id = 1..20): name, price in EUR and description.

Every page ships its data as inline JSON and builds its markup with inline
JavaScript, so a plain HTTP client sees an empty shop.

Run ``python -m shop.demo_site`` from ``example_project/`` to browse it.
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PER_PAGE = 5
CATALOGUE = [
    ("Alpine Backpack", 8900, "A 30-litre pack for day hikes above the tree line."),
    ("Trail Bottle", 1450, "Half a litre of stainless steel that keeps water cold."),
    ("Wool Beanie", 2200, "Merino wool, one size, warm on windy ridges."),
    ("Camp Mug", 1190, "Enamelled steel mug that survives any campfire."),
    ("Head Torch", 3490, "300 lumens and a red light for reading maps at night."),
    ("Rain Shell", 12900, "A light waterproof jacket that packs into its pocket."),
    ("Trek Poles", 5900, "Folding aluminium poles, adjustable from 110 to 135 cm."),
    ("Sleeping Mat", 7450, "Self-inflating, 5 cm thick, rolls up small."),
    ("Pocket Knife", 2890, "Seven tools, one blade, no excuses."),
    ("Map Case", 1690, "Clear, waterproof and big enough for an A4 map."),
    ("Down Jacket", 18900, "Warm, light and compressible for cold evenings."),
    ("Gaiters", 3250, "Keep snow and scree out of your boots."),
    ("Trail Socks", 1590, "Cushioned wool socks for long days on foot."),
    ("Stove Kit", 6400, "A small gas stove with a pot and a windshield."),
    ("Water Filter", 4390, "Filters up to 1,000 litres of stream water."),
    ("Sun Hat", 2590, "Wide brim, breathable, and it floats."),
    ("First-Aid Kit", 2790, "The basics for blisters, cuts and sprains."),
    ("Compass", 1990, "A baseplate compass with a sighting mirror."),
    ("Bivvy Bag", 9900, "An emergency shelter that weighs 300 grams."),
    ("Dry Bags", 2450, "Three roll-top bags in three sizes."),
]
PRODUCTS = {
    number: {
        "id": number,
        "name": name,
        "price": f"€{cents // 100}.{cents % 100:02d}",
        "description": description,
    }
    for number, (name, cents, description) in enumerate(CATALOGUE, start=1)
}
PAGES = (len(PRODUCTS) + PER_PAGE - 1) // PER_PAGE

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body>
<noscript>This shop needs JavaScript.</noscript>
<main id="app"></main>
<script>
var DATA = {data};
{script}
</script>
</body></html>
"""

LIST_SCRIPT = """(function () {
  var app = document.getElementById("app");
  var heading = document.createElement("h1");
  heading.textContent = "Products, page " + DATA.page + " of " + DATA.pages;
  app.appendChild(heading);
  DATA.products.forEach(function (product) {
    var card = document.createElement("div");
    card.className = "product";
    var link = document.createElement("a");
    link.setAttribute("href", "/product/" + product.id);
    link.textContent = product.name;
    var price = document.createElement("span");
    price.className = "price";
    price.textContent = product.price;
    card.appendChild(link);
    card.appendChild(price);
    app.appendChild(card);
  });
  if (DATA.next) {
    var next = document.createElement("a");
    next.className = "next";
    next.setAttribute("href", DATA.next);
    next.textContent = "Next page";
    app.appendChild(next);
  }
})();"""

DETAIL_SCRIPT = """(function () {
  var app = document.getElementById("app");
  var fields = [["h1", "name"], ["p", "price"], ["p", "description"]];
  fields.forEach(function (field) {
    var element = document.createElement(field[0]);
    element.className = field[1];
    element.textContent = DATA[field[1]];
    app.appendChild(element);
  });
  app.querySelector(".price").setAttribute("data-currency", "EUR");
})();"""


def render(title: str, data: object, script: str) -> bytes:
    """An HTML page carrying ``data`` as inline JSON and ``script`` to show it."""
    inline = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    return PAGE.format(title=title, data=inline, script=script).encode("utf-8")


def list_page(page: int) -> bytes | None:
    """Page ``page`` of the product list, or None if there is no such page."""
    if not 1 <= page <= PAGES:
        return None
    first = (page - 1) * PER_PAGE + 1
    data = {
        "page": page,
        "pages": PAGES,
        "products": [
            {key: PRODUCTS[i][key] for key in ("id", "name", "price")}
            for i in range(first, min(first + PER_PAGE, len(PRODUCTS) + 1))
        ],
        "next": f"/products?page={page + 1}" if page < PAGES else None,
    }
    return render(f"Demo shop, page {page}", data, LIST_SCRIPT)


def product_page(product_id: int) -> bytes | None:
    """The detail page of one product, or None if there is no such product."""
    product = PRODUCTS.get(product_id)
    if product is None:
        return None
    return render(product["name"], product, DETAIL_SCRIPT)


def route(path: str, query: str) -> bytes | None:
    """The body for a request path, or None for "not found"."""
    if path == "/":
        return list_page(1)
    if path == "/products":
        values = parse_qs(query).get("page", ["1"])
        return list_page(int(values[0])) if values[0].isdigit() else None
    if path.startswith("/product/"):
        tail = path.removeprefix("/product/")
        return product_page(int(tail)) if tail.isdigit() else None
    return None


class DemoHandler(BaseHTTPRequestHandler):
    """Answers GET requests from ``route``; everything else is a 404."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        body = route(url.path, url.query)
        status = HTTPStatus.OK
        if body is None:
            status = HTTPStatus.NOT_FOUND
            body = b"<!doctype html><title>Not found</title><h1>Not found</h1>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: the crawl's own log says what was fetched."""


class DemoSite:
    """The demo shop on 127.0.0.1 and a free port, served in a daemon thread.

    ``start()`` returns the base URL; ``stop()`` shuts the server down.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._address = (host, port)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:40123`` (after ``start()``)."""
        if self._server is None:
            raise RuntimeError("the demo site is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> str:
        """Start serving and return the base URL."""
        if self._server is None:
            self._server = ThreadingHTTPServer(self._address, DemoHandler)
            self._server.daemon_threads = True
            self._thread = threading.Thread(
                target=self._server.serve_forever, name="demo-shop", daemon=True
            )
            self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop serving and release the port (safe to call twice)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None


if __name__ == "__main__":
    site = DemoSite()
    print(f"Demo shop at {site.start()}/ (Ctrl+C to stop)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        site.stop()
