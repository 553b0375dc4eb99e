"""Writes docs/architecture.md's module map from the package tree: one line a
module, its path and the first sentence of its docstring. Run it after adding,
moving or removing a module (``python docs/module_map.py``);
tests/unit/test_architecture_doc.py fails while the map and the tree differ."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scrapy_cdp_pool"
DOC = ROOT / "docs" / "architecture.md"
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


def listed_modules(doc: str) -> list[str]:
    """The module paths the doc's map lists."""
    section = doc[doc.index(BEGIN) : doc.index(END)]
    return re.findall(r"^\| `([\w/]+\.py)` \|", section, flags=re.MULTILINE)


def main() -> int:
    doc = DOC.read_text(encoding="utf-8")
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    DOC.write_text(doc[:start] + module_map() + doc[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
