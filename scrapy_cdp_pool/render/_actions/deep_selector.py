"""The action selectors' engine: CSS matched through open shadow roots as
Playwright's CSS engine matches it, as JavaScript source for the page.

The roots are searched in order: the document first, then each open shadow
root in document order (a root, then the roots inside it; closed roots are not
reachable, as in Playwright). A selector without combinators is the
browser's own ``querySelector`` in each root. With combinators, a descendant
(`` ``) or child (``>``) combinator also crosses a shadow boundary, from an
element in a shadow root to its host, as in Playwright: ``todo-list li`` matches
an ``<li>`` in the shadow root of a ``<todo-item>`` inside ``<todo-list>``'s
shadow root; sibling combinators (``+``, ``~``) stay among siblings. Each
compound selector between combinators is matched by the browser
(``Element.matches``), and a selector list (``a, b``) matches either. An invalid
selector throws the browser's own ``SyntaxError``.
"""

from __future__ import annotations

# Written without the literal "document.querySelector(": elements.deep()
# rewrites that text in scripts that embed this one.
_ENGINE = r"""(() => {
  const split = (s) => {
    const alts = [];
    let parts = [], combs = [], cur = '', depth = 0, quote = '', pending = '';
    const endCompound = () => { if (cur) { parts.push(cur); cur = ''; } };
    const endAlt = () => {
      endCompound(); alts.push({parts, combs}); parts = []; combs = []; pending = '';
    };
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (!quote && depth === 0 && ' \t\n\r\f>+~,'.includes(c)) {
        endCompound();
        if (c === ',') endAlt();
        else if ('>+~'.includes(c)) pending = c;
        else if (!pending && parts.length) pending = ' ';
        continue;
      }
      if (!cur && parts.length) { combs.push(pending || ' '); pending = ''; }
      cur += c;
      if (c === '\\') { cur += s[++i] || ''; continue; }
      if (quote) { if (c === quote) quote = ''; continue; }
      if (c === '"' || c === "'") quote = c;
      else if (c === '(' || c === '[') depth++;
      else if (c === ')' || c === ']') depth--;
    }
    endAlt();
    return alts;
  };
  const up = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;
  const fits = (el, alt, i) => {
    if (i === 0) return true;
    const comb = alt.combs[i - 1], want = alt.parts[i - 1];
    if (comb === '>' || comb === '+') {
      const p = comb === '>' ? up(el) : el.previousElementSibling;
      return !!p && p.matches(want) && fits(p, alt, i - 1);
    }
    const next = comb === ' ' ? up : (e) => e.previousElementSibling;
    for (let p = next(el); p; p = next(p)) if (p.matches(want) && fits(p, alt, i - 1)) return true;
    return false;
  };
  const roots = () => {
    const out = [];
    const f = (root) => {
      out.push(root);
      for (const host of root.querySelectorAll('*')) if (host.shadowRoot) f(host.shadowRoot);
    };
    f(document);
    return out;
  };
  const inRoot = (root, sel, alts, first) => {
    if (alts.every((alt) => alt.parts.length === 1)) {
      if (!first) return Array.from(root.querySelectorAll(sel));
      const el = root.querySelector(sel);
      return el ? [el] : [];
    }
    const lasts = alts.map((alt) => alt.parts[alt.parts.length - 1]);
    const out = [];
    for (const el of root.querySelectorAll(lasts.join(', '))) {
      if (alts.some((alt, i) => el.matches(lasts[i]) && fits(el, alt, alt.parts.length - 1))) {
        out.push(el);
        if (first) break;
      }
    }
    return out;
  };
  const query = (sel, first) => {
    document['querySelector'](sel);  // throws the browser's SyntaxError for an invalid selector
    const alts = split(sel), out = [];
    for (const root of roots()) {
      out.push(...inRoot(root, sel, alts, first));
      if (first && out.length) break;
    }
    return out;
  };
  return {one: (sel) => query(sel, true)[0] || null, all: (sel) => query(sel, false)};
})()"""

#: ``querySelector`` through open shadow roots (see the module): an expression
#: for a function ``(selector) -> Element | null``
DEEP_QUERY = "(" + _ENGINE + ".one)"
#: ``querySelectorAll`` through open shadow roots: ``(selector) -> Element[]``
DEEP_QUERY_ALL = "(" + _ENGINE + ".all)"
