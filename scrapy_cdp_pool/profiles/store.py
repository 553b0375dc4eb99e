"""ProfileStore: the profile files of one directory (``CDP_POOL_PROFILES_DIR``).

A profile ``NAME`` is ``NAME.json``, a Playwright ``storageState`` (cookies and
each origin's localStorage), and optionally ``NAME.identity.json`` (user agent,
viewport, locale, time zone, headers, geolocation, proxy, signed-out rule; see
:data:`~scrapy_cdp_pool.profiles.validate.IDENTITY_KEYS`).

Files are read when first used and again whenever they change on disk; they are
written atomically (a temporary file in the same directory, mode 0600, renamed
over the old one), so a crash never leaves half a profile. Problems name the
file and what is wrong, never a value. A file written by hand that other local
users can read (cookies, a proxy password) is used, with one WARNING per file
naming it and the fix (``chmod 600``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy_cdp_pool.errors import ProfileFileError
from scrapy_cdp_pool.profiles.validate import identity_problems, storage_state_problems
from scrapy_cdp_pool.render import cap_stored_cookies
from scrapy_cdp_pool.settings.signed_out import SignedOutRule, parse_signed_out

STATE_SUFFIX = ".json"
IDENTITY_SUFFIX = ".identity.json"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}")
FILE_MODE = 0o600
_MAX_PROBLEMS = 5

logger = logging.getLogger(__name__)


@dataclass(frozen=True, repr=False)
class Profile:
    """One stored profile, validated. ``identity`` is the identity file's
    content (``{}`` without one)."""

    name: str
    state_path: Path
    identity_path: Path
    storage_state: dict[str, Any]
    identity: dict[str, Any]

    @property
    def signed_out(self) -> SignedOutRule | None:
        """The profile's own signed-out rule (``signedOut``), if any."""
        return parse_signed_out(self.identity.get("signedOut"))

    def __repr__(self) -> str:  # never the cookies
        return f"<Profile {self.name!r} at {self.state_path}>"


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _warn_if_others_read(path: Path, warned: set[Path]) -> None:
    """One WARNING when ``path`` (a profile file: cookies, maybe a proxy
    password) can be read by the group or by other users."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRGRP | stat.S_IROTH) and path not in warned:
        warned.add(path)
        logger.warning(
            "Profile file %s can be read by other local users (mode %s) and holds cookies or "
            "credentials: run 'chmod 600 %s' (files the plugin writes are 0600)",
            path,
            stat.filemode(mode),
            path,
        )


def check_name(name: str) -> str | None:
    """What is wrong with ``name`` as a profile name, or ``None``."""
    if not NAME_PATTERN.fullmatch(name) or name.endswith(".identity"):
        return (
            f"{name!r} is not a profile name: use letters, digits, '_', '-', '.', '@' "
            "(at most 100, not starting with '.' nor ending with '.identity')"
        )
    return None


class ProfileStore:
    """The profiles in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._cache: dict[str, tuple[Any, Profile]] = {}
        #: files already warned about as readable by others (one warning per file)
        self._warned_readable: set[Path] = set()

    def paths(self, name: str) -> tuple[Path, Path]:
        """``NAME.json`` and ``NAME.identity.json`` in the directory."""
        return self.directory / f"{name}{STATE_SUFFIX}", self.directory / f"{name}{IDENTITY_SUFFIX}"

    def names(self) -> list[str]:
        """Every profile that has a storage-state file, sorted."""
        if not self.directory.is_dir():
            return []
        return sorted(
            path.name.removesuffix(STATE_SUFFIX)
            for path in self.directory.glob(f"*{STATE_SUFFIX}")
            if not path.name.endswith(IDENTITY_SUFFIX) and not path.name.startswith(".")
        )

    def load(self, name: str) -> Profile:
        """Profile ``name``, read again if a file changed since last time.

        :raises ProfileFileError: a file is missing, unreadable or invalid
            (the message names the file and the problem).
        """
        state_path, identity_path = self.paths(name)
        bad_name = check_name(name)
        if bad_name:
            raise ProfileFileError(name, state_path, bad_name)
        stamp = (_stamp(state_path), _stamp(identity_path))
        cached = self._cache.get(name)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if stamp[0] is None:
            raise ProfileFileError(
                name,
                state_path,
                "does not exist (expected a Playwright storageState file; create one with "
                "'scrapy-cdp-pool profile create')",
            )
        state = _read_json(name, state_path)
        _raise_problems(name, state_path, storage_state_problems(state))
        _warn_if_others_read(state_path, self._warned_readable)
        identity: dict[str, Any] = {}
        if stamp[1] is not None:
            identity = _read_json(name, identity_path)
            _raise_problems(name, identity_path, identity_problems(identity))
            _warn_if_others_read(identity_path, self._warned_readable)
        profile = Profile(name, state_path, identity_path, state, identity)
        self._cache[name] = (stamp, profile)
        return profile

    def check(self) -> list[ProfileFileError]:
        """Validate every file of the directory: each profile, and profile
        files without a storage state."""
        if not self.directory.is_dir():
            return [ProfileFileError("*", self.directory, "is not a directory")]
        errors: list[ProfileFileError] = []
        names = self.names()
        for name in names:
            try:
                self.load(name)
            except ProfileFileError as e:
                errors.append(e)
        for path in sorted(self.directory.glob(f"*{IDENTITY_SUFFIX}")):
            name = path.name.removesuffix(IDENTITY_SUFFIX)
            if name not in names and not name.startswith("."):
                state_path = self.paths(name)[0]
                errors.append(
                    ProfileFileError(name, path, f"has no storage state ({state_path.name})")
                )
        return errors

    def save_state(self, name: str, state: dict[str, Any]) -> Path:
        """Write ``state`` (a Playwright ``storageState``) as profile
        ``name``'s ``NAME.json``, atomically, mode 0600; its cookies within a
        browser's caps (:func:`~scrapy_cdp_pool.render.cap_stored_cookies`,
        one WARNING when some are left out).

        :raises ProfileFileError: the name or the state is invalid, or the
            file cannot be written.
        """
        state_path = self.paths(name)[0]
        bad_name = check_name(name)
        if bad_name:
            raise ProfileFileError(name, state_path, bad_name)
        _raise_problems(name, state_path, storage_state_problems(state), verb="cannot be saved")
        # what `profile create` and a sign-in hook read from Playwright (a
        # crawl's save-back is capped as it is read, its own cookies first)
        cookies = list(state.get("cookies", []))
        state = {**state, "cookies": cap_stored_cookies(name, cookies, set())}
        write_atomically(name, state_path, state)
        return state_path

    def save_identity(self, name: str, identity: dict[str, Any]) -> Path:
        """Write profile ``name``'s identity file, atomically, mode 0600.

        :raises ProfileFileError: as :meth:`save_state`.
        """
        identity_path = self.paths(name)[1]
        bad_name = check_name(name)
        if bad_name:
            raise ProfileFileError(name, identity_path, bad_name)
        _raise_problems(name, identity_path, identity_problems(identity), verb="cannot be saved")
        write_atomically(name, identity_path, identity)
        return identity_path


def _read_json(name: str, path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileFileError(name, path, "does not exist") from None
    except UnicodeDecodeError:
        raise ProfileFileError(name, path, "is not UTF-8 text") from None
    except OSError as e:
        raise ProfileFileError(name, path, f"cannot be read: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:  # its message shows positions, not content
        raise ProfileFileError(
            name, path, f"is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None


def _raise_problems(name: str, path: Path, problems: list[str], verb: str = "is invalid") -> None:
    if problems:
        more = len(problems) - _MAX_PROBLEMS
        text = "; ".join(problems[:_MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
        raise ProfileFileError(name, path, f"{verb}: {text}")


def write_atomically(name: str, path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file in the same
    directory (mode 0600) renamed over it.

    :raises ProfileFileError: the directory cannot be written.
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise ProfileFileError(name, path, f"cannot be written: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), FILE_MODE)
            json.dump(data, file, indent=2, ensure_ascii=False)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ProfileFileError(name, path, f"cannot be written: {e.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
