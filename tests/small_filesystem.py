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


@contextlib.contextmanager
def ext4_image(size: str) -> Iterator[Path]:
    """An ext4 file system of ``size`` (``truncate`` syntax: ``64M``) in an
    image file, loop-mounted with ``errors=remount-ro`` on a new directory:
    :func:`fail_disk` makes the kernel turn it read-only as after an I/O
    error. Skipped where loop mounts are refused."""
    directory = Path(tempfile.mkdtemp(prefix="cdp-ext4-"))
    image, mount_point = directory / "disk.img", directory / "mnt"
    mount_point.mkdir()
    with image.open("wb") as file:
        file.truncate(_bytes(size))
    made = subprocess.run(
        ["mkfs.ext4", "-q", "-F", str(image)], capture_output=True, text=True, check=False
    )
    done = made if made.returncode else _mount(image, mount_point)
    if done.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.skip(f"cannot make or loop-mount an ext4 image here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        unmount(mount_point)
        shutil.rmtree(directory, ignore_errors=True)


def _bytes(size: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)


def _mount(image: Path, mount_point: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("mount") or "/bin/mount", "-o", "loop,errors=remount-ro",
         str(image), str(mount_point)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def unmount(mount_point: Path) -> None:
    subprocess.run(
        [shutil.which("umount") or "/bin/umount", str(mount_point)], capture_output=True,
        check=False,
    )  # fmt: skip


def mount_options(mount_point: Path) -> tuple[str, list[str]]:
    """The device and the options ``mount_point`` is mounted with."""
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[1] == str(mount_point):
                return fields[0], fields[3].split(",")
    raise AssertionError(f"{mount_point} is not mounted")


def fail_disk(mount_point: Path) -> None:
    """Make the kernel report an error on ``mount_point``'s ext4 file system
    (its ``trigger_fs_error`` in sysfs): with ``errors=remount-ro`` it aborts
    the journal and turns the file system read-only at once, as after a
    disk's I/O error; the open files' next writes fail (EROFS, SQLite's
    "disk I/O error")."""
    device, _ = mount_options(mount_point)
    Path(f"/sys/fs/ext4/{Path(device).name}/trigger_fs_error").write_text("a test's fault\n")
    options = mount_options(mount_point)[1]
    assert {"ro", "emergency_ro"} & set(options), options  # emergency_ro: Linux 6.x


def repair_and_remount(mount_point: Path) -> None:
    """Unmount the failed file system, repair it (``e2fsck -fy``) and
    mount it read-write again, as an operator would."""
    image = mount_point.parent / "disk.img"
    unmount(mount_point)
    subprocess.run(["e2fsck", "-fy", str(image)], capture_output=True, check=False)
    done = _mount(image, mount_point)
    assert done.returncode == 0, done.stderr
    assert "rw" in mount_options(mount_point)[1]
