"""Every Lua script of the cluster declares the keys it touches in ``KEYS``
(Redis's scripting docs ask for it, a Redis Cluster routes by it, DragonflyDB
refuses a script that touches an undeclared key), or says in its first line
that it does not (``scripts.UNDECLARED_KEYS``, DragonflyDB's flag); the
scripts that do not are a fixed list that may only shrink."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import scrapy_cdp_pool.cluster
import scrapy_cdp_pool.tools
from scrapy_cdp_pool.cluster.scripts import UNDECLARED_KEYS

#: commands whose first argument is not a key
_KEYLESS = {"TIME", "PUBLISH", "SCAN"}
_CALL = re.compile(r"redis\.call\(\s*'(\w+)'\s*(?:,\s*([^,)]+))?")
_BOUND = re.compile(r"local\s+([\w\s,]+?)=\s*((?:KEYS\[\d+\]\s*,?\s*)+)", re.DOTALL)
_DECLARED = re.compile(r"KEYS\[\d+\]")

#: scripts that build key names from the prefix: the frontier's, which reach a
#: gate's queue or a lease's profile lock and host slots from what they read,
#: and the flush, which scans the crawl's keys
UNDECLARED = {
    "scrapy_cdp_pool.cluster.scripts.TAKE",
    "scrapy_cdp_pool.cluster.scripts.SETTLE",
    "scrapy_cdp_pool.cluster.scripts.RENEW",
    "scrapy_cdp_pool.cluster.scripts.HOLDS",
    "scrapy_cdp_pool.cluster.scripts.POISONED",
    "scrapy_cdp_pool.cluster.scripts.UNLOCK_PROFILE",
    "scrapy_cdp_pool.cluster.flush.FLUSH_IF_ALONE",
}


def _scripts() -> dict[str, str]:
    """Every module-level string of the cluster's and the tools' modules that
    holds a ``redis.call``, by ``module.NAME`` where it is assigned."""
    found = {}
    for package in (scrapy_cdp_pool.cluster, scrapy_cdp_pool.tools):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            source = inspect.getsource(module)
            for name, value in vars(module).items():
                assigned = re.search(rf"^{name} = ", source, re.MULTILINE)
                if isinstance(value, str) and "redis.call(" in value and assigned:
                    found[f"{info.name}.{name}"] = value
    return found


def undeclared_keys(script: str) -> list[str]:
    """The key arguments of ``script``'s ``redis.call``s that are neither
    ``KEYS[n]`` nor a local bound to one."""
    code = "\n".join(line.split("--", 1)[0] for line in script.splitlines())
    bound = set()
    for names, keys in _BOUND.findall(code):
        bound.update(name.strip() for name in names.split(","))
        assert len(_DECLARED.findall(keys)) == len(names.split(","))
    bad = []
    for command, arg in _CALL.findall(code):
        arg = arg.strip()
        if command.upper() in _KEYLESS or _DECLARED.fullmatch(arg) or arg in bound:
            continue
        bad.append(f"{command} {arg}")
    return bad


def test_every_script_declares_its_keys_or_says_it_does_not() -> None:
    scripts = {name: text for name, text in _scripts().items() if not name.endswith("._PRELUDE")}
    for name in ("scripts.PUSH", "budget._TAKE", "profile_store._SAVE", "profile_health._FAILED"):
        assert f"scrapy_cdp_pool.cluster.{name}" in scripts
    marked = {name for name, text in scripts.items() if text.startswith(UNDECLARED_KEYS)}
    assert marked == UNDECLARED
    for name, text in scripts.items():
        if name not in marked:
            assert undeclared_keys(text) == [], name


def test_the_check_finds_a_key_built_in_the_script() -> None:
    assert undeclared_keys("redis.call('GET', P .. 'x')") == ["GET P .. 'x'"]
    assert undeclared_keys("local a, b =\n KEYS[1], KEYS[2]\nredis.call('SET', b, 1)") == []
    assert undeclared_keys("redis.call('TIME')") == []
