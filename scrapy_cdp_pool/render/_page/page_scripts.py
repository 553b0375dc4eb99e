"""The scripts :class:`~scrapy_cdp_pool.render._page.page.Page` evaluates in
the page to read its DOM (doctype included, open shadow roots optionally
serialized in place) and to let its HTML parser catch up with a body cut
short: JavaScript source, as strings."""

from __future__ import annotations

# After one turn of the page's event loop: a navigation the page scheduled
# (Lightpanda runs a form submitted from onload on its next turn) has started.
# A document without a root element (a body cut short before it, a script
# that removed it) reads as its doctype alone.
READ_HTML = (
    "new Promise(r => setTimeout(r, 0)).then(() =>"
    " (document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '')"
    " + (document.documentElement ? document.documentElement.outerHTML : ''))"
)
#: :data:`READ_HTML` with every open shadow root (declarative or attached by a
#: script, nested ones too) serialized in place as ``<template
#: shadowrootmode="open">``, as a server writes declarative shadow DOM
#: (``Element.getHTML``'s ``shadowRoots``); the same string as
#: :data:`READ_HTML` when the page has none. Closed roots cannot be reached.
READ_HTML_WITH_SHADOW_ROOTS = """new Promise(r => setTimeout(r, 0)).then(() => {
  const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '';
  const html = document.documentElement;
  if (!html) return doctype;  // no root element (a body cut short, a script removed it)
  const roots = [];
  const walk = (node) => {
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_ELEMENT);
    for (let e = walker.nextNode(); e; e = walker.nextNode()) {
      if (e.shadowRoot) { roots.push(e.shadowRoot); walk(e.shadowRoot); }
    }
  };
  walk(html);
  if (!roots.length || typeof html.getHTML !== 'function') return doctype + html.outerHTML;
  const quoted = (v) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  const attributes = Array.from(html.attributes, a => ` ${a.name}="${quoted(a.value)}"`).join('');
  return `${doctype}<html${attributes}>${html.getHTML({shadowRoots: roots})}</html>`;
})"""


#: resolves once the document's serialized size held still over three checks
#: 10 ms apart, or after 100 checks (see ``Page._parser_caught_up``)
PARSER_CAUGHT_UP = """new Promise(r => {
  let last = -1, same = 0, checks = 0;
  const check = () => {
    const size = document.documentElement ? document.documentElement.outerHTML.length : 0;
    same = size === last ? same + 1 : 0;
    last = size;
    if (same >= 3 || ++checks >= 100) r(); else setTimeout(check, 10);
  };
  setTimeout(check, 0);
})"""
