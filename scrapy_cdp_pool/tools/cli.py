"""The ``scrapy-cdp-pool`` command.

Subcommands (each a :class:`Subcommand` in :data:`SUBCOMMANDS`):

- ``plot STATUS.jsonl [-o STATUS.png]``: draw a ``CDP_POOL_STATUS_FILE``.
- ``measure URL [--browser lightpanda|chromium | --endpoint URL] [--connections 4]
  [--steps 10,40,100]``: size a CDP server (memory per open page and per
  connection).
- ``profile ...``: see :mod:`scrapy_cdp_pool.tools.profiles_cli`.
- ``cluster status|leases|poisoned|pause|resume|purge|export``: see
  :mod:`scrapy_cdp_pool.tools.cluster_cli`.

Exit status: 0 on success, 1 when the work failed (the message says why on
stderr), 2 for bad arguments (argparse's own).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from scrapy_cdp_pool.browser.backends import LIGHTPANDA
from scrapy_cdp_pool.settings.config import BROWSERS
from scrapy_cdp_pool.tools import cluster_cli
from scrapy_cdp_pool.tools import profiles_cli as profile_cli


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: its help line, how it declares its arguments, and
    how it runs (returns the exit status)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# plot ------------------------------------------------------------------------


def _plot_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("status_file", type=Path, help="a CDP_POOL_STATUS_FILE (JSON lines)")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="the PNG to write (default: the status file's name with .png)",
    )


def _plot(args: argparse.Namespace) -> int:
    from scrapy_cdp_pool.errors import PlotError
    from scrapy_cdp_pool.tools.plot import plot_status_file

    output = args.output or args.status_file.with_suffix(".png")
    try:
        written, drawn, skipped = plot_status_file(args.status_file, output)
    except (PlotError, OSError) as e:
        print(f"scrapy-cdp-pool plot: {e}", file=sys.stderr)
        return 1
    note = f" ({skipped} unreadable lines skipped)" if skipped else ""
    print(f"{written}: {drawn} samples{note}")
    return 0


# measure ---------------------------------------------------------------------


def _steps(value: str) -> list[int]:
    try:
        steps = [int(part) for part in value.split(",") if part.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{value!r} is not a list like 10,40,100") from e
    if not steps or any(s < 1 for s in steps) or steps != sorted(set(steps)):
        raise argparse.ArgumentTypeError(
            f"{value!r}: expected increasing page counts >= 1, like 10,40,100"
        )
    return steps


def _page_url(value: str) -> str:
    """An absolute http(s) or file URL, checked before any server starts."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https", "file") or not (
        parts.netloc or parts.scheme == "file"
    ):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an absolute URL (http://..., https://... or file://...)"
        )
    return value


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer >= 1") from e
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer >= 1")
    return number


def _seconds(value: str, *, minimum_exclusive: bool = False) -> float:
    allowed = "> 0" if minimum_exclusive else ">= 0"
    try:
        number = float(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds {allowed}") from e
    if not (number > 0 if minimum_exclusive else number >= 0) or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds {allowed}")
    return number


def _timeout(value: str) -> float:
    return _seconds(value, minimum_exclusive=True)


def _measure_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", type=_page_url, help="the page to open again and again")
    server = parser.add_mutually_exclusive_group()
    server.add_argument(
        "--browser",
        choices=BROWSERS,
        default=LIGHTPANDA.kind,
        help="start this embedded server (default: lightpanda)",
    )
    server.add_argument(
        "--endpoint",
        help="measure a running server instead (http://host:port or ws://...); its "
        "memory is read from its process: --server-pid, or the one listening on a "
        "loopback endpoint's port",
    )
    parser.add_argument(
        "--server-pid",
        type=_positive_int,
        default=None,
        help="with --endpoint: the server's process id",
    )
    parser.add_argument(
        "--connections",
        type=_positive_int,
        default=4,
        help="connections opened before any page (default: 4); Chromium spreads the "
        "pages over them, Lightpanda needs one more per page past them",
    )
    parser.add_argument(
        "--steps",
        type=_steps,
        default=[10, 40, 100],
        help="open pages, cumulative, at each reading (default: 10,40,100)",
    )
    parser.add_argument(
        "--timeout",
        type=_timeout,
        default=30.0,
        help="seconds for the server to answer and a page to load (default: 30)",
    )
    parser.add_argument(
        "--settle",
        type=_seconds,
        default=1.0,
        help="seconds to let memory settle before each reading (default: 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument(
        "--profile",
        default=None,
        help="open every page as this stored profile (its cookies, localStorage, user agent...)",
    )
    parser.add_argument(
        "--profiles-dir",
        default=".",
        help="with --profile: the profiles directory (default: the current one)",
    )


def _measure(args: argparse.Namespace) -> int:
    from scrapy_cdp_pool.browser.cdp import CDPError
    from scrapy_cdp_pool.errors import NavigationFailed, ServerStartError
    from scrapy_cdp_pool.tools.sizing import measure, report_lines

    if args.server_pid is not None and args.endpoint is None:
        print("scrapy-cdp-pool measure: --server-pid needs --endpoint", file=sys.stderr)
        return 2
    out = sys.stderr if args.json else sys.stdout
    context = None
    if args.profile is not None:
        from scrapy_cdp_pool.errors import ProfileError
        from scrapy_cdp_pool.profiles.options import context_options
        from scrapy_cdp_pool.profiles.store import ProfileStore

        try:
            context = context_options(ProfileStore(args.profiles_dir).load(args.profile))
        except ProfileError as e:
            print(f"scrapy-cdp-pool measure: {e}", file=sys.stderr)
            return 1

    def progress(line: str) -> None:
        print(line, file=out, flush=True)

    try:
        report = asyncio.run(
            measure(
                args.url,
                browser=args.browser,
                endpoint=args.endpoint,
                server_pid=args.server_pid,
                connections=args.connections,
                steps=args.steps,
                timeout_s=args.timeout,
                settle_s=args.settle,
                progress=progress,
                context=context,
            )
        )
    except (CDPError, OSError, ServerStartError, ValueError, NavigationFailed) as e:
        print(f"scrapy-cdp-pool measure: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.as_json()))
    else:
        for line in report_lines(report):
            print(line)
    return 0


#: Every subcommand by name (a later ``profile`` joins here).
SUBCOMMANDS: dict[str, Subcommand] = {
    "plot": Subcommand("draw a status file (JSON lines) as a PNG", _plot_arguments, _plot),
    "measure": Subcommand(
        "size a CDP server: memory per open page and per connection",
        _measure_arguments,
        _measure,
    ),
    "profile": Subcommand(profile_cli.HELP, profile_cli.add_arguments, profile_cli.run),
    "cluster": Subcommand(cluster_cli.HELP, cluster_cli.add_arguments, cluster_cli.run),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scrapy-cdp-pool", description="Tools for scrapy-cdp-pool crawls."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in SUBCOMMANDS.items():
        sub = subparsers.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``scrapy-cdp-pool`` console script."""
    args = build_parser().parse_args(argv)
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
