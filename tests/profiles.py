"""Helpers for the profile tests: write profile files, read the site's records."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from tests.servers import SiteServer

MOZILLA_UA = "Mozilla/5.0 (X11; Linux x86_64) ProfileTest/1.0"


def token() -> str:
    return uuid.uuid4().hex[:8]


def cookie(name: str, value: str, **extra: Any) -> dict[str, Any]:
    """A cookie for the test site (127.0.0.1), as Playwright writes it."""
    return {"name": name, "value": value, "domain": "127.0.0.1", "path": "/", "expires": -1,
            "httpOnly": False, "secure": False, "sameSite": "Lax", **extra}  # fmt: skip


def write_profile(
    directory: Path,
    name: str,
    *,
    session: str | None = None,
    cookies: list[dict[str, Any]] | None = None,
    local_storage: dict[str, dict[str, str]] | None = None,
    identity: dict[str, Any] | None = None,
) -> Path:
    """``NAME.json`` with a ``session`` cookie (and ``cookies``, and
    localStorage per origin), and ``NAME.identity.json`` when ``identity``."""
    all_cookies = list(cookies or [])
    if session is not None:
        all_cookies.append(cookie("session", session))
    state = {
        "cookies": all_cookies,
        "origins": [
            {"origin": origin, "localStorage": [{"name": k, "value": v} for k, v in items.items()]}
            for origin, items in (local_storage or {}).items()
        ],
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(state))
    path.chmod(0o600)  # as the plugin writes them (a 0644 one is warned about)
    if identity is not None:
        identity_path = directory / f"{name}.identity.json"
        identity_path.write_text(json.dumps(identity))
        identity_path.chmod(0o600)
    return path


def temp_files(directory: Path) -> list[str]:
    """Temporary files left in ``directory`` (a save-back must leave none)."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def session_inflight_max(site: SiteServer, session: str) -> int:
    """Most requests of ``session`` the site served at once."""
    value: int = site.stats()["inflight_max"].get(f"session:{session}", 0)
    return value


def hits(site: SiteServer, path_qs: str) -> int:
    value: int = site.stats()["hits_by_url"].get(path_qs, 0)
    return value


def profile_stats(stats: dict[str, Any], name: str) -> dict[str, Any]:
    prefix = f"cdp_pool/profile/{name}/"
    return {k.removeprefix(prefix): v for k, v in stats.items() if k.startswith(prefix)}
