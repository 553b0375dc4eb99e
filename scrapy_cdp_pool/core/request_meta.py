"""Every request-meta value the plugin reads, checked in one place.

A bad value fails its request alone, by name, with
:class:`~scrapy_cdp_pool.errors.InvalidRequestMeta` (counted once, in
``cdp_pool/failures/InvalidRequestMeta``), never as another error type and
never by being read as something else: :func:`check_request_meta` runs when
the request reaches the downloader
(:class:`~scrapy_cdp_pool.resilience.RequestChecksMiddleware`), and
:func:`read_render_meta` (the same checks of the render's keys) when the
download handler builds the render, so a crawl without that middleware is
refused the same way. A ``cdp*`` key the plugin does not know is warned about
once per key, with the closest known one (:class:`UnknownMetaKeys`).
"""

from __future__ import annotations

import difflib
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.core.gates import NOT_BEFORE_META_KEY, PROFILE_META_KEY, not_before_problem
from scrapy_cdp_pool.errors import InvalidRequestMeta
from scrapy_cdp_pool.render import Action, CaptureRule, parse_actions, parse_capture, parse_console
from scrapy_cdp_pool.settings.config import DIALOG_ANSWERS, SHADOW_ROOTS, WAIT_UNTIL, PoolConfig
from scrapy_cdp_pool.settings.expectation import parse_expectation
from scrapy_cdp_pool.settings.init_scripts import load_scripts

if TYPE_CHECKING:
    from scrapy import Request

logger = logging.getLogger(__name__)

#: the meta keys a spider sets for the plugin (docs/meta-keys.md)
REQUEST_KEYS = frozenset(
    {
        "cdp",
        "cdp_actions",
        "cdp_capture",
        "cdp_console",
        "cdp_dialogs",
        "cdp_downloads",
        "cdp_expect",
        "cdp_include_page",
        "cdp_init_scripts",
        "cdp_navigation_timeout",
        "cdp_not_before",
        "cdp_profile",
        "cdp_shadow_roots",
        "cdp_wait_until",
    }
)
#: the meta keys the plugin writes on a response (a follow-up request that
#: copies the response's meta carries them, unread)
RESPONSE_KEYS = frozenset(
    {
        "cdp_console_messages",
        "cdp_dialogs_seen",
        "cdp_document_url",
        "cdp_downloaded",
        "cdp_fallback_reason",
        "cdp_ignored_navigations",
        "cdp_ladder",
        "cdp_network",
        "cdp_page",
        "cdp_page_kind",
        "cdp_results",
        "cdp_rung",
    }
)
KNOWN_KEYS = REQUEST_KEYS | RESPONSE_KEYS


@dataclass(frozen=True)
class RenderMeta:
    """The render's meta values, checked (settings' defaults where unset)."""

    wait_until: str
    shadow_roots: str
    dialogs: str
    navigation_timeout_s: float
    #: how long the page's first byte may take, seconds (see
    #: :func:`_first_byte_timeout_s`)
    first_byte_timeout_s: float
    actions: tuple[Action, ...]
    capture: CaptureRule | None
    console: bool
    include_page: bool
    downloads: bool
    init_scripts: tuple[str, ...]
    maxsize: int
    warnsize: int
    fail_on_dataloss: bool


def _refuse(
    request: Request, key: str, value: Any, expected: str, sep: str = ": "
) -> InvalidRequestMeta:
    return InvalidRequestMeta(f"{request}: meta[{key!r}] = {value!r}{sep}{expected}")


def _choice(request: Request, key: str, default: str, allowed: tuple[str, ...]) -> str:
    value = request.meta.get(key, default)
    if value not in allowed:
        raise _refuse(request, key, value, f"use one of {', '.join(allowed)}", "; ")
    return str(value)


def _seconds(request: Request, key: str, default: float) -> float:
    value = request.meta.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise _refuse(request, key, value, "expected a finite number of seconds > 0", "; ")
    return float(value)


def _first_byte_timeout_s(
    request: Request, config: PoolConfig, navigation_timeout_s: float
) -> float:
    """How long the page's first byte may take: the navigation timeout, or a
    longer ``download_timeout`` the user set (``meta["download_timeout"]``
    other than ``DOWNLOAD_TIMEOUT``, a spider's ``download_timeout``, or
    ``DOWNLOAD_TIMEOUT`` set above Scrapy's default while
    ``CDP_POOL_NAVIGATION_TIMEOUT_SECONDS`` is not), as plain Scrapy waits
    for it; a request's own ``meta["cdp_navigation_timeout"]`` decides alone.
    Before, a first byte after 35 s under ``download_timeout = 60`` failed
    at the navigation timeout of 30 s where plain Scrapy waited."""
    if "cdp_navigation_timeout" in request.meta:
        return navigation_timeout_s
    timeout = request.meta.get("download_timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        return navigation_timeout_s
    if not config.download_timeout_set and timeout == config.download_timeout_s:
        return navigation_timeout_s  # Scrapy's default, not the user's
    return max(navigation_timeout_s, float(timeout))


def _size(request: Request, key: str, default: int) -> int:
    """A byte count (a number >= 0; 0: no limit), as a whole number."""
    value = request.meta.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise _refuse(request, key, value, "expected a number of bytes >= 0 (0: no limit)", "; ")
    return int(value)


def _flag(request: Request, key: str, default: bool) -> bool:
    """A boolean meta value of Scrapy's (``default`` when unset; 0 and 1 as
    False and True, which Scrapy's truth test accepts too)."""
    value = request.meta.get(key, default)
    if value not in (True, False):
        raise _refuse(request, key, value, "expected True or False", "; ")
    return bool(value)


def _parsed(
    request: Request, key: str, parse: Any, *args: Any, sep: str = ": ", named: bool = False
) -> Any:
    """``parse(*args)``, its ValueError named as the request's meta key's
    (``named``: the parser's message names them already)."""
    try:
        return parse(*args)
    except InvalidRequestMeta:
        raise
    except ValueError as e:
        message = str(e) if named else f"{request}: meta[{key!r}]{sep}{e}"
        raise InvalidRequestMeta(message) from None


def read_render_meta(request: Request, config: PoolConfig) -> RenderMeta:
    """The render's meta values of ``request``, with the settings' defaults.

    :raises InvalidRequestMeta: naming the request, the key and what is
        expected.
    """
    meta = request.meta
    include_page = meta.get("cdp_include_page", False)
    if not isinstance(include_page, bool):
        raise _refuse(request, "cdp_include_page", include_page, "expected True or False", "; ")
    navigation_timeout_s = _seconds(request, "cdp_navigation_timeout", config.navigation_timeout_s)
    return RenderMeta(
        wait_until=_choice(request, "cdp_wait_until", config.wait_until, WAIT_UNTIL),
        shadow_roots=_choice(request, "cdp_shadow_roots", config.shadow_roots, SHADOW_ROOTS),
        dialogs=_choice(request, "cdp_dialogs", config.dialogs, DIALOG_ANSWERS),
        navigation_timeout_s=navigation_timeout_s,
        first_byte_timeout_s=_first_byte_timeout_s(request, config, navigation_timeout_s),
        actions=tuple(
            _parsed(request, "cdp_actions", parse_actions, meta.get("cdp_actions") or ())
        ),
        capture=_parsed(
            request,
            "cdp_capture",
            parse_capture,
            meta.get("cdp_capture"),
            config.capture_max_body,
            config.capture_max_total,
        ),
        console=bool(
            _parsed(request, "cdp_console", parse_console, meta.get("cdp_console"), sep=" = ")
        ),
        include_page=include_page,
        downloads=bool(
            _parsed(request, "cdp_downloads", parse_console, meta.get("cdp_downloads"), sep=" = ")
        ),
        init_scripts=config.init_scripts
        + _parsed(
            request,
            "cdp_init_scripts",
            load_scripts,
            meta.get("cdp_init_scripts"),
            f"{request}: meta['cdp_init_scripts']",
            named=True,
        ),
        maxsize=_size(request, "download_maxsize", config.download_maxsize),
        warnsize=_size(request, "download_warnsize", config.download_warnsize),
        fail_on_dataloss=_flag(
            request, "download_fail_on_dataloss", config.download_fail_on_dataloss
        ),
    )


def check_request_meta(
    request: Request, config: PoolConfig, max_wait_s: float, rendered: bool
) -> None:
    """Check every meta value the plugin reads on ``request`` (the render's
    only when it is ``rendered``).

    :raises InvalidRequestMeta: naming the request, the key and what is
        expected.
    """
    meta = request.meta
    flag = meta.get("cdp")
    if flag is not None and not isinstance(flag, bool):
        raise _refuse(
            request, "cdp", flag, "expected True (render it), False (never render it) or None"
        )
    profile = meta.get(PROFILE_META_KEY)
    if profile is not None and (not isinstance(profile, str) or not profile.strip()):
        raise _refuse(
            request,
            PROFILE_META_KEY,
            profile,
            "expected a profile's name (a non-empty string), or None for no profile",
        )
    not_before = meta.get(NOT_BEFORE_META_KEY)
    problem = not_before_problem(not_before, max_wait_s)
    if problem is not None:
        raise _refuse(request, NOT_BEFORE_META_KEY, not_before, problem)
    if "cdp_expect" in meta and meta["cdp_expect"] is not None:
        _parsed(
            request,
            "cdp_expect",
            parse_expectation,
            meta["cdp_expect"],
            f"{request}: meta['cdp_expect']",
            named=True,
        )
    if rendered:  # plain requests keep plain Scrapy's reading of these
        if meta.get("download_timeout") is not None:
            _seconds(request, "download_timeout", 1.0)
        read_render_meta(request, config)


class UnknownMetaKeys:
    """Warns once per key about a meta key that looks meant for the plugin
    (``cdp...``, or ``cdp`` misspelt as ``cpd``) but is none it reads, with
    the closest known key: a misspelt ``cdp_action`` is otherwise silently
    ignored."""

    def __init__(self, extra: dict[str, Any] | None = None) -> None:
        self._warned: set[str] = set()
        self._extra = extra

    def check(self, meta: dict[str, Any]) -> None:
        for key in meta:
            if not isinstance(key, str) or key in KNOWN_KEYS or key in self._warned:
                continue
            looks_ours = key.startswith("cdp") or (key != "cdp" and sorted(key) == sorted("cdp"))
            if not looks_ours or key.startswith("cdp_pool"):
                continue
            self._warned.add(key)
            close = difflib.get_close_matches(key, sorted(REQUEST_KEYS), n=1, cutoff=0.5)
            logger.warning(
                "meta[%r] is not a key scrapy_cdp_pool reads%s; it is ignored (warned once; "
                "the keys are listed in docs/meta-keys.md)",
                key,
                f" (did you mean {close[0]!r}?)" if close else "",
                extra=self._extra,
            )
