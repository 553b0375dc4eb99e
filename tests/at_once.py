"""Run a test's cases at once: for cases that mostly wait (on a site's
pauses, delays or deadlines). One parametrized case after another, each held
a worker of the suite for the whole of its waits; at once, the waits overlap.
Every case runs to its end; the failures are reported together, each named
with its traceback."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from twisted.internet.defer import Deferred, DeferredList


def _report(failed: list[str], count: int) -> None:
    if failed:
        raise AssertionError(f"{len(failed)} of {count} cases failed:\n" + "\n".join(failed))


async def each_at_once(cases: dict[str, Callable[[], Awaitable[None]]]) -> None:
    """Run each case (a coroutine function: its crawls in this reactor) at
    once and wait for all of them."""
    names = list(cases)
    results = await DeferredList(
        [Deferred.fromCoroutine(cases[name]()) for name in names], consumeErrors=True
    )
    _report(
        [
            f"--- {name} ---\n{result.getTraceback()}"
            for name, (ok, result) in zip(names, results, strict=True)
            if not ok
        ],
        len(names),
    )


def each_in_threads(cases: dict[str, Callable[[], None]]) -> None:
    """Run each case (a function that blocks: its crawls in processes of
    their own) in a thread of its own, and wait for all of them."""
    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {name: pool.submit(case) for name, case in cases.items()}
    failed = []
    for name, future in futures.items():
        error = future.exception()
        if error is not None:
            text = "".join(traceback.format_exception(error))
            failed.append(f"--- {name} ---\n{text}")
    _report(failed, len(cases))
