"""A real small filesystem for disk-full tests: a ``tmpfs`` mounted by the
test on a new private directory and unmounted and removed after it. Mounting
needs root (or CAP_SYS_ADMIN): where it is refused, the test is skipped,
saying so."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(size: str) -> Iterator[Path]:
    """A ``tmpfs`` of ``size`` (``mount`` syntax: ``4m``) on a new directory."""
    directory = Path(tempfile.mkdtemp(prefix="cdp-full-"))
    mount = shutil.which("mount") or "/bin/mount"
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(directory)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        directory.rmdir()
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(
            [shutil.which("umount") or "/bin/umount", "-l", str(directory)],
            capture_output=True, check=False,
        )  # fmt: skip
        with contextlib.suppress(OSError):
            directory.rmdir()


def fill(directory: Path, leave_bytes: int) -> Path:
    """Fill ``directory``'s filesystem with one file until at most
    ``leave_bytes`` are free (others may write meanwhile); the file (delete
    it to free the space)."""
    filler = directory / "filler"
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as file:
        while True:
            stat = os.statvfs(directory)
            if stat.f_bavail * stat.f_frsize <= leave_bytes:
                break
            try:
                if not file.write(chunk):
                    break
            except OSError:
                break  # full already
    return filler
