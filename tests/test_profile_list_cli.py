"""``scrapy-cdp-pool profile list``: each stored profile of a directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from scrapy_cdp_pool.tools.cli import main
from tests.profiles import MOZILLA_UA, write_profile


def test_profile_list_names_each_profile_with_what_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_profile(tmp_path, "alice", session="a1", identity={"userAgent": MOZILLA_UA})
    write_profile(tmp_path, "bob", session="b1")
    (tmp_path / "carol.json").write_text("{not json")
    (tmp_path / "carol.json").chmod(0o600)
    assert main(["profile", "list", "--dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{tmp_path}: 3 profile(s)"
    alice, bob, carol = lines[1:]
    assert alice.startswith("alice  saved 20")
    assert alice.endswith("  identity  1 cookie(s)  ok")
    assert bob.endswith("  no identity  1 cookie(s)  ok")
    assert carol.startswith("carol  saved ")
    assert "problem: carol.json" in carol
