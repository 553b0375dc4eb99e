"""``/shadow/*``: content inside shadow roots (issue 27), as Lit and web
components render it: an input and a button a spider's actions must reach."""

from __future__ import annotations

from aiohttp import web

from .common import html_response

routes = web.RouteTableDef()

_APP = """<todo-app></todo-app><p id="out"></p>
<script>
customElements.define("todo-app", class extends HTMLElement {
  connectedCallback() {
    const root = this.attachShadow({mode: "open"});
    root.innerHTML = '<input class="new-todo"><button class="add">add</button>';
    root.querySelector(".add").addEventListener("click", () => {
      document.getElementById("out").textContent = "added " + root.querySelector(".new-todo").value;
      const done = document.createElement("span");
      done.className = "done-mark";
      root.appendChild(done);
    });
  }
});
</script>"""


@routes.get("/shadow/app")
async def app(request: web.Request) -> web.Response:
    return html_response("Shadow", _APP)


_DECLARATIVE = """<div id="host"><template shadowrootmode="open"><p id="inside">declared</p>
<slot></slot></template><p id="light">light</p></div>
<closed-box><template shadowrootmode="closed"><p id="secret">closed</p></template></closed-box>
<attached-box></attached-box>
<script>
customElements.define("attached-box", class extends HTMLElement {
  connectedCallback() {
    this.attachShadow({mode: "open"}).innerHTML = '<p id="attached">attached</p>';
  }
});
</script>"""


@routes.get("/shadow/declarative")
async def declarative(request: web.Request) -> web.Response:
    """Declarative shadow roots as a server sends them (an open one with a
    slot, a closed one) beside a root a script attached."""
    return html_response("Declarative", _DECLARATIVE)


_KEYS = """<key-box></key-box><p id="log"></p>
<script>
customElements.define("key-box", class extends HTMLElement {
  connectedCallback() {
    const root = this.attachShadow({mode: "open"});
    root.innerHTML = '<form><input class="field"></form>';
    const field = root.querySelector(".field"), log = document.getElementById("log");
    const note = (text) => { log.textContent += (log.textContent ? " " : "") + text; };
    for (const type of ["keydown", "keypress", "keyup"])
      field.addEventListener(type, (e) => note(type + ":" + e.key));
    field.addEventListener("input", () => note("input:" + field.value));
    root.querySelector("form").addEventListener("submit", (e) => {
      e.preventDefault();
      note("submit:" + field.value);
    });
  }
});
</script>"""


@routes.get("/shadow/keys")
async def keys(request: web.Request) -> web.Response:
    """An input in a form inside an open shadow root, logging in ``#log``
    each key event it hears (``keydown:a``), its value at each ``input``
    and the form's submission (``submit:<value>``, not sent)."""
    return html_response("Keys", _KEYS)


_NESTED = """<pick-list></pick-list><p id="out"></p>
<script>
customElements.define("pick-item", class extends HTMLElement {
  connectedCallback() {
    const root = this.attachShadow({mode: "open"});
    root.innerHTML = '<li class="item"><button class="pick">pick</button></li>';
    root.querySelector(".pick").addEventListener("click", () => {
      document.getElementById("out").textContent = "picked " + this.dataset.n;
    });
  }
});
customElements.define("pick-list", class extends HTMLElement {
  connectedCallback() {
    const items = [1, 2, 3].map(n => `<pick-item data-n="${n}"></pick-item>`).join("");
    this.attachShadow({mode: "open"}).innerHTML = '<ul class="items">' + items + "</ul>";
  }
});
</script>"""


@routes.get("/shadow/nested")
async def nested(request: web.Request) -> web.Response:
    """Three ``<pick-item>`` in ``<pick-list>``'s shadow root, each with its
    button in a shadow root of its own (as Lit renders a list); a click on
    one writes ``picked <n>`` in ``#out``."""
    return html_response("Nested", _NESTED)
