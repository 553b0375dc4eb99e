"""Issue 29, items 1 and 5: the built distributions, as a user gets them.

``python -m build`` makes the sdist and, from it, the wheel. Meanwhile pip
downloads, from the index, wheels only, what the wheel with ``[lightpanda]``
needs on this machine (its requirements as ``pyproject.toml`` declares them)
and the sdist's build requirement (the wheelhouse: one resolution per test
run, shared by the xdist workers). Then:

- the wheel's dependencies resolve for Windows, macOS 11 and an older
  manylinux (glibc 2.17), wheels only, with no ``lightpanda`` (an extra);
  with ``[lightpanda]`` where it has a wheel (this machine: glibc 2.35 or
  later, as the suite's default backend needs), it is in: the wheelhouse;
- the wheel and the sdist install into fresh venvs (not the checkout) from
  that wheelhouse alone (``--no-index``: what the index resolved, without
  resolving it again per venv) and the example crawl runs from a copy of
  ``example_project`` outside the checkout: the wheel without the extra on
  Chromium (its default backend refused at start, by name: a venv truly
  without ``lightpanda``), the sdist with ``[lightpanda]`` on the default
  backend, built in an isolated env from the wheelhouse's setuptools.

The venvs are made without pip and installed into by this interpreter's pip
(``pip --python``, pip 22.3 or later): users install with pip, and a pip per
venv (``ensurepip``) cost ~6 s of CPU each.

Marked ``pypi``: building (setuptools in an isolated env), the wheelhouse
and the resolutions need the public package index, which CI has.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock  # a dependency of Scrapy's (tldextract)

from tests.scrapy_command import CrawlRun, run_crawl

# building and the wheelhouse take ~35 s with a warm pip cache; a cold one
# downloads ~100 MB, so more than the suite's 180 s per test is allowed
pytestmark = [pytest.mark.pypi, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "scrapy_cdp_pool"
PIP_DEADLINE_S = 600  # a hung index fails the test instead of holding its worker
PRODUCTS = 20  # the demo shop's (example_project/shop/demo_site.py)
#: the sdist's build requirements (``[build-system] requires``)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
BUILD_REQUIRES: list[str] = PYPROJECT["build-system"]["requires"]
#: the environment minus ``PYTHONPATH``: a checkout on it would be what a
#: venv's ``import scrapy_cdp_pool`` finds
ENVIRON = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        argv, capture_output=True, text=True, timeout=PIP_DEADLINE_S, check=False,
        env=ENVIRON, **kwargs,
    )  # fmt: skip


def _shared(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, testrun_uid: str, name: str
) -> Path:
    """A directory ``name`` for this test run, the same for every xdist
    worker (lock it with ``FileLock(f"{directory}.lock")``)."""
    if worker_id == "master":
        shared = tmp_path_factory.getbasetemp() / name
    else:
        shared = tmp_path_factory.getbasetemp().parent / f"{name}-{testrun_uid}"
    shared.mkdir(exist_ok=True)
    return shared


#: what the wheel with ``[lightpanda]`` requires, as ``pyproject.toml`` declares
#: it (the wheel's metadata is made from it: a requirement the build dropped
#: or added fails the venvs' installs from the wheelhouse)
REQUIRES: list[str] = [
    *PYPROJECT["project"]["dependencies"],
    *PYPROJECT["project"]["optional-dependencies"]["lightpanda"],
]


def _downloading(wheels: Path) -> subprocess.Popen[str]:
    """pip downloading, from the index, wheels only, :data:`REQUIRES` and the
    sdist's :data:`BUILD_REQUIRES` into ``wheels``, started."""
    return subprocess.Popen([
        sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:",
        "--dest", str(wheels), *REQUIRES, *BUILD_REQUIRES,
    ], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENVIRON)  # fmt: skip


def _downloaded(shared: Path, downloading: subprocess.Popen[str]) -> None:
    """Wait for ``downloading`` (:func:`_downloading`) and mark ``shared``'s
    wheelhouse done."""
    out, _ = downloading.communicate(timeout=PIP_DEADLINE_S)
    assert downloading.returncode == 0, out
    (shared / "done").touch()


@pytest.fixture(scope="module")
def dists(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, testrun_uid: str
) -> tuple[Path, Path]:
    """(wheel, sdist) built from a copy of this checkout (two builds in one
    tree collide on its ``.egg-info``), the wheel from the sdist; once per
    test run, shared by the xdist workers (the first one builds). The
    wheelhouse (:func:`wheelhouse`) is downloaded meanwhile: pip mostly
    waits on the index while the build runs."""
    shared = _shared(tmp_path_factory, worker_id, testrun_uid, "dist")
    house = _shared(tmp_path_factory, worker_id, testrun_uid, "wheelhouse")
    with FileLock(f"{shared}.lock"):
        if not (shared / "built").exists():
            with FileLock(f"{house}.lock"):
                downloading = None if (house / "done").exists() else _downloading(house / "wheels")
                source = tmp_path_factory.mktemp("source") / "scrapy-cdp-pool"
                ignored = (".*", "__pycache__", "*.egg-info", "_build", "build", "dist")
                shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*ignored))
                out = shared / "out"
                built = _run([sys.executable, "-m", "build", "--outdir", str(out), str(source)])
                if downloading is not None:
                    _downloaded(house, downloading)
                assert built.returncode == 0, built.stdout + built.stderr
                (shared / "build.log").write_text(built.stdout + built.stderr)
                (shared / "built").touch()
    [wheel] = (shared / "out").glob("scrapy_cdp_pool-*.whl")
    [sdist] = (shared / "out").glob("scrapy_cdp_pool-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def wheelhouse(
    dists: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    testrun_uid: str,
) -> Path:
    """A directory of wheels (pip's ``--find-links``): what pip resolves from
    the index, wheels only, for :data:`REQUIRES` on this machine (the wheel
    with ``[lightpanda]``) and the sdist's ``BUILD_REQUIRES``; both venvs
    install from it alone. Once per test run, shared by the xdist workers
    (downloaded during :func:`dists`' build)."""
    shared = _shared(tmp_path_factory, worker_id, testrun_uid, "wheelhouse")
    with FileLock(f"{shared}.lock"):
        if not (shared / "done").exists():
            _downloaded(shared, _downloading(shared / "wheels"))
    return shared / "wheels"


def test_the_build_warns_of_no_deprecation_and_states_the_license_in_spdx(
    dists: tuple[Path, Path],
) -> None:
    """Issue 40, item 3: the ``project.license`` table made setuptools warn
    three times that it stops working after 2027-02-18; the SPDX string does
    not (setuptools 77 and later, bounded in ``build-system.requires``)."""
    wheel, _ = dists
    log = (wheel.parent.parent / "build.log").read_text()
    assert "Successfully built" in log
    assert "deprecat" not in log.lower(), log
    name = wheel.name.split("-py3", 1)[0]
    with zipfile.ZipFile(wheel) as zipped:
        metadata = zipped.read(f"{name}.dist-info/METADATA").decode().splitlines()
    assert "License-Expression: BSD-3-Clause" in metadata, metadata
    assert not [line for line in metadata if line.startswith("License:")], metadata


def _package_files() -> set[str]:
    """The package's files in the checkout, as paths inside a wheel."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_wheel_and_the_sdist_hold_every_file_of_the_package(
    dists: tuple[Path, Path],
) -> None:
    wheel, sdist = dists
    listed = _run([sys.executable, "-m", "zipfile", "-l", str(wheel)])
    in_wheel = {line.split()[0] for line in listed.stdout.splitlines()[1:]}
    expected = _package_files()
    assert "scrapy_cdp_pool/py.typed" in expected
    assert expected <= in_wheel, sorted(expected - in_wheel)
    tarred = _run(["tar", "tzf", str(sdist)])
    prefix = sdist.name.removesuffix(".tar.gz") + "/"
    in_sdist = {name.removeprefix(prefix) for name in tarred.stdout.split()}
    assert expected <= in_sdist, sorted(expected - in_sdist)


#: the platforms the wheel, without the extra, is resolved for (none has a
#: ``lightpanda`` wheel: the extra would not resolve there)
RESOLUTIONS = ["win_amd64", "macosx_11_0_arm64", "manylinux2014_x86_64"]


def test_the_wheels_dependencies_resolve_where_lightpanda_has_a_wheel_and_without_it(
    dists: tuple[Path, Path], wheelhouse: Path, tmp_path: Path
) -> None:
    """Without the extra, the wheel resolves for Windows, macOS 11 and an
    older manylinux, wheels only, with no ``lightpanda`` (``--dry-run
    --platform``: the three resolutions run at once, each mostly parsing the
    index's pages). With ``[lightpanda]`` where it has a wheel, it is in:
    the wheelhouse is that resolution for this machine (Linux, glibc 2.35 or
    later: the suite's default backend runs on it), so it is not resolved a
    second time."""
    running = {
        name: _resolving(dists[0], [name], tmp_path / str(n)) for n, name in enumerate(RESOLUTIONS)
    }
    for name, proc in running.items():
        out, err = proc.communicate(timeout=PIP_DEADLINE_S)
        assert proc.returncode == 0, (name, out + err)
        [line] = [line for line in out.splitlines() if line.startswith("Would install ")]
        assert re.search(r"\bscrapy-2\.", line, re.IGNORECASE), (name, line)
        assert "lightpanda" not in line.lower(), (name, line)
    downloaded = sorted(path.name.lower() for path in wheelhouse.iterdir())
    assert [name for name in downloaded if name.startswith("scrapy-2.")], downloaded
    assert [name for name in downloaded if re.match(r"lightpanda-\d", name)], downloaded
    assert all(name.endswith(".whl") for name in downloaded), downloaded


def _resolving(requirement: Path, platforms: list[str], target: Path) -> subprocess.Popen[str]:
    """pip resolving ``requirement`` for ``platforms`` (``--dry-run``: its
    "Would install ..." line says what it chose), started."""
    return subprocess.Popen([
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
        "--only-binary", ":all:", *(f"--platform={name}" for name in platforms),
        "--python-version", "3.11", "--target", str(target / "target"), str(requirement),
    ], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def _fresh_venv(directory: Path, requirement: str, wheelhouse: Path) -> Path:
    """A new venv in ``directory`` (without pip of its own) with
    ``requirement`` installed by this interpreter's pip from ``wheelhouse``
    alone (the checkout is not on its path); returns its ``bin``."""
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(directory)])
    assert made.returncode == 0, made.stderr
    bin_dir = directory / "bin"
    # --no-compile: no byte-code for the ~5,000 modules of the dependencies
    # ahead of time (Python compiles what the crawl imports as it goes)
    installed = _run([
        sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q",
        "--no-compile", "--no-index", "--find-links", str(wheelhouse), requirement,
    ], cwd=directory)  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    where = _run(
        [str(bin_dir / "python"), "-c", "import scrapy_cdp_pool; print(scrapy_cdp_pool.__file__)"],
        cwd=directory,
    )  # fmt: skip
    assert where.stdout.startswith(str(directory)), where.stdout + where.stderr
    return bin_dir


def _example_crawl(bin_dir: Path, project: Path, *args: str) -> CrawlRun:
    if not project.exists():
        shutil.copytree(ROOT / "example_project", project)
    return run_crawl(project, list(args), spider="products", python=str(bin_dir / "python"))


def _products(run: CrawlRun) -> set[int]:
    assert run.returncode == 0, run.log
    assert run.error_records() == [], run.log
    return {item["id"] for item in run.items}


def test_the_built_wheel_installs_and_crawls_without_lightpanda(
    dists: tuple[Path, Path], wheelhouse: Path, tmp_path: Path
) -> None:
    bin_dir = _fresh_venv(tmp_path / "venv", str(dists[0]), wheelhouse)
    absent = _run([str(bin_dir / "python"), "-c", "import lightpanda"])
    assert "No module named 'lightpanda'" in absent.stderr  # not installed: an extra
    project = tmp_path / "example"
    run = _example_crawl(bin_dir, project, "-s", "CDP_POOL_BROWSER=chromium")
    assert _products(run) == set(range(1, PRODUCTS + 1))
    # the wheel's scrapy.commands entry point (what warns of CDP_POOL_* settings
    # set without the add-on): Scrapy's command line finds it
    checked = _run([str(bin_dir / "python"), "-m", "scrapy", "cdp-pool"], cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[1:2] == ["add-on: enabled (ADDONS)"], checked.stdout

    refused = _example_crawl(bin_dir, project)  # the default backend: Lightpanda
    assert refused.returncode == 1, refused.log
    assert len(refused.error_records()) == 1, refused.log
    assert "CDP_POOL_BROWSER = 'lightpanda' (the default) cannot start" in refused.log
    assert "pip install 'scrapy-cdp-pool[lightpanda]'" in refused.log
    assert "ModuleNotFoundError" not in refused.log
    assert refused.items == []


def test_the_built_sdist_installs_with_lightpanda_and_crawls_on_the_default_backend(
    dists: tuple[Path, Path], wheelhouse: Path, tmp_path: Path
) -> None:
    bin_dir = _fresh_venv(tmp_path / "venv", f"{dists[1]}[lightpanda]", wheelhouse)
    run = _example_crawl(bin_dir, tmp_path / "example")
    assert "CDP pool ready: lightpanda" in run.log
    assert _products(run) == set(range(1, PRODUCTS + 1))
