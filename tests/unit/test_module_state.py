"""No module-level run-time state but what is process-wide by design (issue
28): each name here is one that a process, not a crawl, owns, and
core/runtime.py's docstring says so. A warn-once flag or a cache of one crawl
belongs to that crawl's objects. (UPPER_CASE names are constant tables, by
convention, and the CDP_POOL_NAME registries POOLS and BUDGETS among them:
their objects are shared by crawlers of one name, as docs/settings.md says.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scrapy_cdp_pool"

#: (module, name): why the process owns it
PROCESS_WIDE = {
    ("telemetry/metrics.py", "_endpoints"): "a metrics port is the process's, shared by crawlers",
    ("telemetry/metrics.py", "_endpoints_lock"): "guards _endpoints across threads",
    ("jobdir/database.py", "_scanned"): "databases found sound at start, by inode, size, mtime",
    ("browser/pool/private_dir.py", "_swept"): "stale private directories of dead processes",
    ("settings/url_patterns.py", "_cache"): "compiled patterns: a pure function's memo",
    ("resilience/backoff.py", "_rng"): "the jitter's random source",
}
_MUTABLE_CALLS = {"set", "dict", "list", "deque", "Lock", "Random", "SharedByName", "count"}


def _module_state(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        call = value.func if isinstance(value, ast.Call) else None
        called = getattr(call, "attr", None) or getattr(call, "id", None)
        mutable = isinstance(value, (ast.Dict, ast.Set, ast.List)) or called in _MUTABLE_CALLS
        flag = isinstance(value, ast.Constant) and isinstance(value.value, bool)
        for target in targets:
            name = getattr(target, "id", "")
            constant = name.lstrip("_").isupper() or name == "__all__"  # tables, never changed
            if not constant and (mutable or (flag and name.startswith("_"))):
                names.append(name)
    return names


def test_module_level_state_is_only_what_a_process_owns() -> None:
    found = {
        (path.relative_to(PACKAGE).as_posix(), name)
        for path in PACKAGE.rglob("*.py")
        for name in _module_state(path)
    }
    assert found - set(PROCESS_WIDE) == set()
    assert set(PROCESS_WIDE) - found == set()  # the list stays true
    runtime_doc = (PACKAGE / "core" / "runtime.py").read_text(encoding="utf-8")
    for _, name in PROCESS_WIDE:
        assert f"``{name}``" in runtime_doc


def test_docstrings_refer_only_to_what_the_repository_holds() -> None:
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text, path
        assert not re.search(r"\b[Ii]ssues? \d+", text), path
