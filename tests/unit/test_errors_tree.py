"""The exception tree drawn in ``scrapy_cdp_pool.errors``' docstring is the
classes' own (a new exception, or a moved one, fails here until the drawing
follows)."""

from __future__ import annotations

import inspect

from scrapy_cdp_pool import errors


def _drawn() -> list[str]:
    doc = errors.__doc__ or ""
    block = doc.split(
        "also is; ``tests/unit/test_errors_tree.py`` checks it against the classes)::"
    )[1]
    return [line.rstrip() for line in block.strip("\n").splitlines() if line.strip()]


def _tree(cls: type, depth: int = 0) -> list[str]:
    own = [b for b in cls.__bases__ if b.__module__ == errors.__name__]
    also = [b.__name__ for b in cls.__bases__[1:]] if own else []
    line = "    " * (depth + 1) + cls.__name__ + (f" ({', '.join(also)})" if also else "")
    children = sorted(
        (
            c
            for c in vars(errors).values()
            if inspect.isclass(c)
            and c.__module__ == errors.__name__
            and [b for b in c.__bases__ if b.__module__ == errors.__name__][:1] == [cls]
        ),
        key=lambda c: c.__name__,
    )
    return [line] + [entry for child in children for entry in _tree(child, depth + 1)]


def test_the_drawn_exception_tree_is_the_classes_own() -> None:
    assert _drawn() == _tree(errors.CDPPoolError)
