"""The README's Architecture section lists the layers in the order the import
contract (pyproject.toml's ``[tool.importlinter]``, checked by ``lint-imports``
in CI) enforces them."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_lists_the_layers_the_contract_enforces() -> None:
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [layers_contract] = [
        c for c in contract["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
    ]
    enforced = [
        name.strip().removeprefix("scrapy_cdp_pool.")
        for layer in layers_contract["layers"]
        for name in layer.split("|")
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Architecture") :]
    listed: list[str] = []
    for line in re.findall(r"^\d+\. (.+)$", section, flags=re.MULTILINE):
        listed += re.findall(r"`([a-z_]+)`", line.split(" — ")[0])
    assert listed == enforced


def test_the_module_map_lists_every_module_of_the_tree() -> None:
    spec = importlib.util.spec_from_file_location("module_map", ROOT / "docs" / "module_map.py")
    assert spec is not None
    assert spec.loader is not None
    module_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module_map)
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = sorted(
        p.relative_to(module_map.PACKAGE).as_posix() for p in module_map.PACKAGE.rglob("*.py")
    )
    assert module_map.listed_modules(doc) == tree  # else: python docs/module_map.py
    assert module_map.module_map() in doc  # and each line says what its docstring says


def test_the_api_reference_has_a_section_per_module() -> None:
    spec = importlib.util.spec_from_file_location("module_map", ROOT / "docs" / "module_map.py")
    assert spec is not None
    assert spec.loader is not None
    module_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module_map)
    assert (ROOT / "docs" / "api.md").read_text(encoding="utf-8") == module_map.api_page()
