"""A tiny JavaScript-rendered shop for end-to-end crawl tests.

``/products?page=N`` (N = 1..5) lists 3 products each (ids 1..15 in order);
every page but the last has an ``a.next`` link. ``/product/<id>`` shows
the product. All product markup is built by inline JavaScript from inline
JSON, so a crawler without a browser sees no products and no next link.
"""

from __future__ import annotations

from aiohttp import web

from .common import html_response, script_json

routes = web.RouteTableDef()

PAGES = 5
PER_PAGE = 3
PRODUCTS = {
    i: {"id": i, "name": f"Product {i}", "price": f"{i * 1.25 + 5:.2f}"}
    for i in range(1, PAGES * PER_PAGE + 1)
}

LIST_SCRIPT = """<div id="products"></div>
<nav id="pager"></nav>
<script>
(function () {
  var data = %s;
  var box = document.getElementById("products");
  data.products.forEach(function (product) {
    var row = document.createElement("div");
    row.className = "product";
    var link = document.createElement("a");
    link.setAttribute("href", "/product/" + product.id);
    link.textContent = product.name;
    var price = document.createElement("span");
    price.className = "price";
    price.textContent = product.price;
    row.appendChild(link);
    row.appendChild(price);
    box.appendChild(row);
  });
  if (data.next) {
    var next = document.createElement("a");
    next.className = "next";
    next.setAttribute("href", data.next);
    next.textContent = "next";
    document.getElementById("pager").appendChild(next);
  }
  document.body.dataset.rendered = "yes";
})();
</script>"""

DETAIL_SCRIPT = """<div id="detail"></div>
<script>
(function () {
  var product = %s;
  var box = document.getElementById("detail");
  var name = document.createElement("h1");
  name.className = "name";
  name.textContent = product.name;
  var price = document.createElement("span");
  price.className = "price";
  price.textContent = product.price;
  box.appendChild(name);
  box.appendChild(price);
  document.body.dataset.rendered = "yes";
})();
</script>"""


@routes.get("/products")
async def products(request: web.Request) -> web.Response:
    """One page of the product list; 404 outside pages 1..5."""
    try:
        page = int(request.query.get("page", "1"))
    except ValueError:
        raise web.HTTPNotFound() from None
    if not 1 <= page <= PAGES:
        raise web.HTTPNotFound()
    first = (page - 1) * PER_PAGE + 1
    data = {
        "products": [PRODUCTS[i] for i in range(first, first + PER_PAGE)],
        "next": f"/products?page={page + 1}" if page < PAGES else None,
    }
    return html_response(f"Products {page}", LIST_SCRIPT % script_json(data))


@routes.get(r"/product/{id:\d+}")
async def product(request: web.Request) -> web.Response:
    """One product's page (``h1.name``, ``span.price``); 404 if unknown."""
    item = PRODUCTS.get(int(request.match_info["id"]))
    if item is None:
        raise web.HTTPNotFound()
    return html_response(item["name"], DETAIL_SCRIPT % script_json(item))
