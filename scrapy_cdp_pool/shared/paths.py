"""The file and directory settings, checked when the crawl starts (by the
add-on), so that a path that cannot be used is refused by name before the
first page rather than as a raw traceback from the component that opens it.

Each check raises ``ValueError`` naming the setting, the path and the OS's
reason, as every other invalid ``CDP_POOL_*`` setting does.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import TextIO

logger = logging.getLogger(__name__)

#: files the plugin writes that name hosts, endpoints or requests: the crawl's
#: user only
PRIVATE_FILE_MODE = 0o600


def check_writable_file(name: str, path: str) -> None:
    """``path`` can be opened for appending (it is created if missing, empty:
    the component that writes it opens it for appending too).

    :raises ValueError: a missing or unwritable directory, a directory given
        as the file, a path under a regular file.
    """
    try:
        open_private_for_append(path, name).close()  # created 0600, never readable by others
    except OSError as e:
        raise ValueError(f"{name}: {path!r} cannot be written ({_reason(e)})") from e


def check_directory(name: str, path: str) -> None:
    """``path`` is an existing directory.

    :raises ValueError: it is missing, a file, or cannot be looked at.
    """
    try:
        if not Path(path).is_dir():
            os.stat(path)  # the OS's reason, when there is one
            raise ValueError(f"{name}: {path!r} is not a directory")
    except OSError as e:
        raise ValueError(f"{name}: {path!r} is not a directory ({_reason(e)})") from e


def make_private_directory(name: str, path: str) -> None:
    """Create the directory ``path`` with mode 0700 (its missing parents with
    the default mode) when it does not exist; an existing one is left as it is.

    :raises ValueError: it cannot be created, or is not a directory.
    """
    directory = Path(path)
    if directory.is_dir():
        return
    try:
        directory.mkdir(mode=0o700, parents=True)
    except OSError as e:
        raise ValueError(f"{name}: {path!r} cannot be created ({_reason(e)})") from e


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def open_private_for_append(
    path: str | Path, setting: str, *, line_buffered: bool = False
) -> TextIO:
    """``path`` opened for appending text, created 0600 (never through a
    symbolic link); an existing file of the crawl's user that others could
    read is made 0600, with an INFO line naming ``setting``.

    :raises OSError: it cannot be opened (missing folder, no permission), it
        is a symbolic link, or another user owns it (its lines would be theirs
        to read).
    """
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, PRIVATE_FILE_MODE)
    except OSError as e:
        if path.is_symlink():
            raise OSError(e.errno, "it is a symbolic link; give the file itself") from None
        raise
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise OSError(
                f"it is owned by another user (uid {info.st_uid}): the crawl writes only its own"
            )
        if info.st_mode & 0o077:
            os.fchmod(fd, PRIVATE_FILE_MODE)
            logger.info(
                "%s %s was readable by other users (mode %s): made 0600",
                setting,
                path,
                oct(stat.S_IMODE(info.st_mode)),
            )
        return os.fdopen(fd, "a", encoding="utf-8", buffering=1 if line_buffered else -1)
    except BaseException:
        os.close(fd)
        raise
