"""Every module of the package is in a layer of the import contract
(pyproject.toml's ``[tool.importlinter]``, checked by ``lint-imports`` in the
README's test command), so none may import anything unchecked."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import tomllib
from pathlib import Path

import scrapy_cdp_pool

ROOT = Path(__file__).resolve().parents[2]


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _layer_modules() -> list[str]:
    [layers] = [c for c in _contracts() if c["type"] == "layers"]
    names: list[str] = []
    for layer in layers["layers"]:  # type: ignore[attr-defined]
        names += [name.strip() for name in layer.split("|")]
    return names


def test_every_module_is_in_a_layer() -> None:
    layers = _layer_modules()
    modules = [
        info.name for info in pkgutil.walk_packages(scrapy_cdp_pool.__path__, "scrapy_cdp_pool.")
    ]
    outside = [
        module
        for module in modules
        if not any(module == layer or module.startswith(layer + ".") for layer in layers)
    ]
    assert len(modules) > 150  # the walk found the package
    assert outside == []


def test_no_import_is_waived() -> None:
    assert all("ignore_imports" not in contract for contract in _contracts())


def test_the_browser_side_may_not_import_scrapy() -> None:
    [forbidden] = [c for c in _contracts() if c["type"] == "forbidden"]
    assert forbidden["source_modules"] == ["scrapy_cdp_pool.browser"]
    assert forbidden["forbidden_modules"] == ["scrapy"]


def test_the_render_layer_has_one_front_door() -> None:
    # render/__init__.py is the one way in: its internals are private (render/_*)
    # and import-linter's private_modules contract keeps the rest of the package out.
    [private] = [c for c in _contracts() if c["type"] == "private_modules"]
    assert private["packages_with_private_modules"] == ["scrapy_cdp_pool.render"]
    render = ROOT / "scrapy_cdp_pool" / "render"
    assert sorted(p.name for p in render.iterdir() if p.suffix == ".py") == ["__init__.py"]
    front_door = importlib.import_module("scrapy_cdp_pool.render")
    assert all(getattr(front_door, name) is not None for name in front_door.__all__)


#: function-level imports of the package's own modules, each for a reason that is
#: not a cycle: the CLIs load each subcommand's modules when it runs; the cluster's
#: Redis client (redis-py) is loaded only with a cluster configured
LAZY_IMPORTS = {
    ("tools/cli.py", "*"): "each subcommand's modules, loaded when it runs",
    ("tools/profiles_cli.py", "*"): "each subcommand's modules, loaded when it runs",
    ("tools/scrapy_command.py", "*"): "imported by Scrapy on every command: loaded when it runs",
    ("cluster/install.py", "scrapy_cdp_pool.cluster.frontier"): "redis-py, with a cluster only",
    ("cluster/install.py", "scrapy_cdp_pool.cluster.redis_client"): "redis-py, with a cluster only",
}


def test_no_import_in_a_function_dodges_a_cycle() -> None:
    package = ROOT / "scrapy_cdp_pool"
    found = []
    for path in package.rglob("*.py"):
        name = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith(
                    "scrapy_cdp_pool"
                ):
                    if (name, "*") in LAZY_IMPORTS or (name, inner.module) in LAZY_IMPORTS:
                        continue
                    found.append(f"{name}: {inner.module}")
    assert found == []


def _render_imports() -> dict[str, set[str]]:
    """Each module of ``render/`` -> the modules of ``render/`` it imports,
    those under ``if TYPE_CHECKING`` included (every ``from ... import``)."""
    render = ROOT / "scrapy_cdp_pool" / "render"
    graph: dict[str, set[str]] = {}
    for path in render.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "scrapy_cdp_pool.render."
            ):
                graph[name].add(str(node.module))
    return graph


def test_no_import_cycle_inside_render_type_level_included() -> None:
    # issue 36: "the type-level cycle inside render/ goes" (16 modules through
    # page.py, the action steps and spec.py before page_handle.py, action.py
    # and capture_rule.py)
    graph = _render_imports()
    cycles = []
    for start in graph:
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            module, path = stack.pop()
            for imported in graph.get(module, ()):
                if imported == start:
                    cycles.append(" -> ".join([*path, start]))
                elif imported not in seen:
                    seen.add(imported)
                    stack.append((imported, [*path, imported]))
    assert cycles == []
