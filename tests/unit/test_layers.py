"""Every module of the package is in a layer of the import contract
(pyproject.toml's ``[tool.importlinter]``, checked by ``lint-imports`` in the
README's test command), so none may import anything unchecked."""

from __future__ import annotations

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
