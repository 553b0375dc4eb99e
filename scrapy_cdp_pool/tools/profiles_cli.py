"""``scrapy-cdp-pool profile``: create and check stored profiles.

- ``profile create NAME --url URL [--script FILE] [profile options]``: opens
  URL in a browser through Playwright (an embedded ``--browser``, or a running
  ``--endpoint``), runs ``async def sign_in(page)`` from FILE, then writes
  ``NAME.json`` (the context's storage state) and, when profile options are
  given, ``NAME.identity.json``; both mode 0600.
- ``profile check``: validates every file of the directory; exit status 1 when
  any has a problem.
- ``profile list``: each stored profile, one line: name, when its storage
  state was last saved (the file's time, UTC), whether it has an identity
  file, its cookies, ``ok`` or its problem. Health (failures, retirement) is
  counted per crawl in its stats, not stored: not listed.

The directory is ``--dir``, else the project's ``CDP_POOL_PROFILES_DIR`` (or
the ``SCRAPY_CDP_POOL_PROFILES_DIR`` environment variable).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy_cdp_pool.browser.backends import CHROMIUM, LIGHTPANDA, backend_named
from scrapy_cdp_pool.browser.pool.server_options import SERVER_LEVEL
from scrapy_cdp_pool.errors import ProfileFileError
from scrapy_cdp_pool.profiles.browser import playwright_page, run_hook
from scrapy_cdp_pool.profiles.options import describe_requirements
from scrapy_cdp_pool.profiles.store import Profile, ProfileStore, check_name
from scrapy_cdp_pool.profiles.validate import identity_problems
from scrapy_cdp_pool.settings.config import BROWSERS, PoolConfig

HELP = "create stored profiles (signed-in identities) and check their files"
PROXY_PASSWORD_ENV = "CDP_POOL_PROXY_PASSWORD"  # noqa: S105 - a variable name, not a secret
PROG = "scrapy-cdp-pool profile"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="profile_command", required=True, metavar="ACTION")
    text = "open a URL, sign in, save the profile"
    create = actions.add_parser("create", help=text, description=text)
    create.add_argument("name", help="the profile's name (NAME.json, NAME.identity.json)")
    create.add_argument("--url", required=True, help="the page to open first")
    create.add_argument("--script", type=Path, help="a Python file with async def sign_in(page)")
    _dir_argument(create)
    server = create.add_mutually_exclusive_group()
    server.add_argument(
        "--browser",
        choices=BROWSERS,
        default=None,
        help="embedded server to start (default: lightpanda, started with "
        'the proxy and time zone if any; chromium for a "Mozilla" user '
        "agent)",
    )
    server.add_argument("--endpoint", help="a running CDP server (http://host:port or ws://...)")
    create.add_argument("--timeout", type=float, default=60.0, help="seconds (default: 60)")
    create.add_argument("--user-agent", help="identity: User-Agent")
    create.add_argument("--locale", help="identity: locale, e.g. fr-FR")
    create.add_argument("--timezone", help="identity: time zone, e.g. Europe/Paris")
    create.add_argument("--viewport", help="identity: WIDTHxHEIGHT, e.g. 1280x800")
    create.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="identity: an extra HTTP header (repeatable)",
    )
    create.add_argument("--proxy", help="identity: proxy server, e.g. http://proxy:3128")
    create.add_argument(
        "--proxy-username",
        help=f"identity: the proxy's user name; its password is read from the "
        f"environment variable {PROXY_PASSWORD_ENV}",
    )
    create.add_argument("--signed-out", help='identity: signed-out rule, "url:REGEX" or "css:SEL"')
    text = "validate every profile file"
    check = actions.add_parser("check", help=text, description=text)
    _dir_argument(check)
    text = "each stored profile: last saved, identity, cookies, problem if any"
    listing = actions.add_parser("list", help=text, description=text)
    _dir_argument(listing)


def _dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="the profiles directory (default: CDP_POOL_PROFILES_DIR)",
    )


def run(args: argparse.Namespace) -> int:
    directory = args.dir or _settings_dir()
    if directory is None:
        print(
            f"{PROG}: no profile directory: pass --dir or set CDP_POOL_PROFILES_DIR",
            file=sys.stderr,
        )
        return 2
    store = ProfileStore(directory)
    if args.profile_command == "check":
        return _check(store)
    if args.profile_command == "list":
        return _list(store)
    return _create(store, args)


def _settings_dir() -> Path | None:
    from scrapy.utils.project import get_project_settings

    value = get_project_settings().get("CDP_POOL_PROFILES_DIR")
    return Path(value) if value else None


def _check(store: ProfileStore) -> int:
    errors = store.check()
    for error in errors:
        print(f"{error.path}: {error.problem}", file=sys.stderr)
    names = store.names()
    print(f"{store.directory}: {len(names)} profile(s), {len(errors)} problem(s)")
    return 1 if errors else 0


def _list(store: ProfileStore) -> int:
    names = store.names()
    print(f"{store.directory}: {len(names)} profile(s)")
    for name in names:
        state_path, identity_path = store.paths(name)
        saved = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(state_path.stat().st_mtime))
        try:
            profile = store.load(name)
        except ProfileFileError as e:
            print(f"{name}  saved {saved}  problem: {e.path.name} {e.problem}")
            continue
        cookies = len(profile.storage_state.get("cookies") or [])
        identity = "identity" if identity_path.exists() else "no identity"
        print(f"{name}  saved {saved}  {identity}  {cookies} cookie(s)  ok")
    return 0


def identity_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The identity file's content from the command's options.

    :raises ValueError: an option is malformed.
    """
    identity: dict[str, Any] = {}
    for key, value in (
        ("userAgent", args.user_agent),
        ("locale", args.locale),
        ("timezoneId", args.timezone),
    ):
        if value:
            identity[key] = value
    if args.viewport:
        width, sep, height = args.viewport.lower().partition("x")
        if not (sep and width.isdigit() and height.isdigit()):
            raise ValueError(f"--viewport {args.viewport!r}: expected WIDTHxHEIGHT like 1280x800")
        identity["viewport"] = {"width": int(width), "height": int(height)}
    headers = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--header {header!r}: expected 'NAME: VALUE'")
        headers[name.strip()] = value.strip()
    if headers:
        identity["extraHTTPHeaders"] = headers
    if args.proxy:
        if urlsplit(args.proxy).username is not None:  # never echo it: it holds a password
            raise ValueError(
                "--proxy: credentials in the URL; use --proxy-username, and the environment "
                f"variable {PROXY_PASSWORD_ENV} for the password"
            )
        identity["proxy"] = {"server": args.proxy}
        if args.proxy_username:
            if PROXY_PASSWORD_ENV not in os.environ:
                raise ValueError(
                    f"--proxy-username: put the proxy's password in the environment "
                    f"variable {PROXY_PASSWORD_ENV}"
                )
            identity["proxy"]["username"] = args.proxy_username
            identity["proxy"]["password"] = os.environ[PROXY_PASSWORD_ENV]
    elif args.proxy_username:
        raise ValueError("--proxy-username: given without --proxy")
    if args.signed_out:
        identity["signedOut"] = args.signed_out
    problems = identity_problems(identity)
    if problems:
        raise ValueError("; ".join(problems))
    return identity


def _create(store: ProfileStore, args: argparse.Namespace) -> int:
    bad_name = check_name(args.name)
    if bad_name:
        print(f"{PROG} create: {bad_name}", file=sys.stderr)
        return 2
    try:
        identity = identity_from_args(args)
        sign_in = _load_script(args.script) if args.script else None
    except ValueError as e:
        print(f"{PROG} create: {e}", file=sys.stderr)
        return 2
    state_path, identity_path = store.paths(args.name)
    empty: dict[str, Any] = {"cookies": [], "origins": []}
    profile = Profile(args.name, state_path, identity_path, empty, identity)
    try:
        state = asyncio.run(_open_and_sign_in(profile, args, sign_in))
        store.save_state(args.name, state)
        if identity:
            store.save_identity(args.name, identity)
    except ProfileFileError as e:
        print(f"{PROG} create: {e.path}: {e.problem}", file=sys.stderr)
        return 1
    except TimeoutError:
        print(
            f"{PROG} create: not done within --timeout {args.timeout:g} s (opening the page "
            "or the sign-in script)",
            file=sys.stderr,
        )
        return 1
    except Exception as e:  # noqa: BLE001 - the user's script, the browser: say what failed
        print(f"{PROG} create: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    written = [state_path] + ([identity_path] if identity else [])
    print(f"profile {args.name!r}: wrote {', '.join(str(p) for p in written)}")
    return 0


def _load_script(path: Path) -> Any:
    if not path.is_file():
        raise ValueError(f"--script {path}: no such file")
    sign_in = runpy.run_path(str(path)).get("sign_in")
    if not callable(sign_in):
        raise ValueError(f"--script {path}: defines no sign_in(page) function")
    return sign_in


async def _open_and_sign_in(profile: Profile, args: argparse.Namespace, sign_in: Any) -> Any:
    from scrapy_cdp_pool.browser.pool.capabilities import discover
    from scrapy_cdp_pool.browser.pool.servers import embedded_server
    from scrapy_cdp_pool.profiles.options import context_options, playwright_context_args

    options = context_options(profile)
    needs, server_options = options.requirements(), options.server_options(proxy=True)
    server = None
    endpoint = args.endpoint
    dedicated = False
    config = None
    if endpoint is None:
        # As in a crawl: Lightpanda, with the proxy and time zone for the
        # whole server, unless the profile needs what only Chromium does.
        backend = backend_named(args.browser) if args.browser else None
        if backend is None:
            backend = CHROMIUM if needs - SERVER_LEVEL else LIGHTPANDA
        if backend.dedicated_servers and server_options is not None:
            # Like a crawl's dedicated server: the proxy and time zone for the
            # whole (embedded, short-lived) server.
            needs -= server_options.covers
            dedicated = True
        config = PoolConfig(browser=backend.kind)
        server = embedded_server(config, server_options if dedicated else None)
        endpoint = await server.ensure_running()
    try:
        if server is not None:
            info = await server.server_info(args.timeout)
        else:
            info = await discover(endpoint, args.timeout)
        missing = needs & info.unsupported
        if missing:
            raise ValueError(
                f"{info.label} cannot honour {describe_requirements(missing)}; "
                "use --browser chromium or an --endpoint that can"
            )
        async with (
            asyncio.timeout(args.timeout),
            playwright_page(
                endpoint,
                playwright_context_args(profile, dedicated=dedicated),
                args.timeout,
                config,
            ) as (
                context,
                page,
            ),
        ):
            proxy = (profile.identity.get("proxy") or {}).get("server")
            try:
                response = await page.goto(args.url)
            except Exception as e:
                if not proxy:
                    raise
                reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise ValueError(
                    f"{args.url}: did not load through the profile's proxy {proxy} (wrong "
                    f"credentials?): {reason}"
                ) from e
            if response is not None and response.status == 407:
                if not (profile.identity.get("proxy") or {}).get("username"):
                    raise ValueError(
                        f"{args.url}: the proxy asks for credentials (407): add "
                        f"--proxy-username and {PROXY_PASSWORD_ENV}"
                    )
                raise ValueError(f"{args.url}: the proxy refused the profile's credentials (407)")
            if sign_in is not None:
                await run_hook(sign_in, page)
            return await context.storage_state()
    finally:
        if server is not None:
            await server.stop()
