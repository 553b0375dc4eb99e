"""Issue 40, item 2: README.md's two commands start with a check of the
Python version, which fails at once, naming the version needed and the one
found, on a Python older than 3.11 (before, pip 23 backtracked for 48 minutes
through every ``redis`` and ``psutil`` release on Python 3.10). The commands are
read as .ci/run reads them (the ```sh blocks); the check is run with this
interpreter told it is an older one (its ``sys.version_info`` and
``sys.version`` replaced before the check's code runs), and as it is.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests.servers import ROOT

FAKE_OLDER = (
    "import sys\n"
    "sys.version_info = (3, 10, 13, 'final', 0)\n"
    "sys.version = '3.10.13 (main, Jan  1 2024, 00:00:00) [GCC 12.2.0]'\n"
)


def _commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return [b.strip() for b in re.findall(r"```sh\n(.*?)\n```", readme, re.DOTALL)[:2]]


def _check_code(command: str) -> str:
    first = command.split(" && ", 1)[0]
    argv = shlex.split(first)
    assert argv[:2] == ["python3", "-c"], command  # the check comes first
    return argv[2]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("which", [0, 1], ids=["example crawl", "test suite"])
def test_the_readme_command_refuses_an_older_python_naming_the_version(which: int) -> None:
    code = _check_code(_commands()[which])
    refused = _run(FAKE_OLDER + code)
    assert refused.returncode == 1, refused.stderr
    assert "needs Python 3.11+" in refused.stderr
    assert "is Python 3.10.13" in refused.stderr
    accepted = _run(code)  # this interpreter (3.11 or later: the suite runs on it)
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stderr == ""


def test_the_readme_says_the_python_version() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head = readme.split("```sh", 1)[0]
    assert "Python 3.11+" in head
