"""``/shadow/*``: content inside open shadow roots (issue 27), as Lit and web
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
