"""The allow-list of Scrapy's handler tests and docs/response.md agree: every
reason a test is allowed to fail for is written in the docs (no browser)."""

from __future__ import annotations

from pathlib import Path

from tests.scrapy_suite.allowed import reasons

RESPONSE_DOC = Path(__file__).resolve().parent.parent / "docs" / "response.md"


def _words(text: str) -> str:
    return " ".join(text.split())


def test_every_allowed_reason_is_in_the_docs() -> None:
    docs = _words(RESPONSE_DOC.read_text(encoding="utf-8"))
    missing = [reason for reason in sorted(reasons()) if _words(reason) not in docs]
    assert not missing, missing


def test_every_reason_in_the_docs_section_is_allowed() -> None:
    """The section's list items (a ``- `` line and its indented continuation
    lines) are the allow-list's reasons, no more."""
    docs = RESPONSE_DOC.read_text(encoding="utf-8")
    section = docs.split("## Scrapy's own handler tests", 1)[1]
    items: list[str] = []
    for line in section.splitlines():
        if line.startswith("- "):
            items.append(line[2:])
        elif line.startswith("  ") and items:
            items[-1] += " " + line
    allowed = {_words(reason) for reason in reasons()}
    assert [item for item in map(_words, items) if item not in allowed] == []
    assert len(items) == len(allowed)
