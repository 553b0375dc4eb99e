"""Writes docs/architecture.md's module map from the package tree (one line a
module, its path and the first sentence of its docstring) and docs/api.md (the
API reference: one autodoc section a module). Run it after adding, moving or
removing a module (``python docs/module_map.py``);
tests/unit/test_architecture_doc.py fails while the pages and the tree differ."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scrapy_cdp_pool"
DOC = ROOT / "docs" / "architecture.md"
API = ROOT / "docs" / "api.md"
API_HEAD = """# API reference

Built from the docstrings of every module of the package (Sphinx autodoc), in the order
of the [module map](architecture.md#module-map). The names a project uses are re-exported
by `scrapy_cdp_pool` itself (`Addon`, `CDPDownloadHandler`, `ConcurrencyBudget`,
`ConnectionPool`, `EngineStatusExtension`, `IdentityAwarePriorityQueue`, `PoolConfig`,
`ProfileMiddleware`) and every exception is in `scrapy_cdp_pool.errors`. A package's
section shows its docstring; its classes are documented in the modules that define them.
"""
BEGIN = "<!-- module map: written by docs/module_map.py -->"
END = "<!-- end of module map -->"


def first_sentence(path: Path) -> str:
    """The first sentence of a module's docstring, on one line."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(docstring.split())
    match = re.match(r"(.+?\.)(\s|$)", text)
    sentence = (match.group(1) if match else text).rstrip(".")
    return sentence if len(sentence) <= 200 else sentence[:199].rsplit(" ", 1)[0] + " …"


def module_map() -> str:
    """The map's Markdown: a table of every module of the package."""
    rows = ["| module | what it holds |", "|---|---|"]
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        rows.append(f"| `{name}` | {first_sentence(path).replace('|', '/')} |")
    return "\n".join([BEGIN, "", *rows, "", END])


def api_page() -> str:
    """docs/api.md: an autodoc section per module (packages: their docstring)."""
    parts = [API_HEAD]
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).with_suffix("")
        package = relative.name == "__init__"
        name = ".".join((relative.parent if package else relative).parts)
        options = "\n   :no-members:" if package else ""
        parts.append(f"## `{name}`\n\n```{{eval-rst}}\n.. automodule:: {name}{options}\n```\n")
    return "\n".join(parts)


def listed_modules(doc: str) -> list[str]:
    """The module paths the doc's map lists."""
    section = doc[doc.index(BEGIN) : doc.index(END)]
    return re.findall(r"^\| `([\w/]+\.py)` \|", section, flags=re.MULTILINE)


def main() -> int:
    doc = DOC.read_text(encoding="utf-8")
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    DOC.write_text(doc[:start] + module_map() + doc[end:], encoding="utf-8")
    API.write_text(api_page(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
