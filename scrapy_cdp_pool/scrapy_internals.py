"""The one module that touches Scrapy's private parts.

Scrapy offers no public way to do a few things the plugin needs, so it reads
or overrides these internals (all present from Scrapy 2.13 to 2.19):

- ``ExecutionEngine._slot.inprogress``: the requests the engine still holds
  (download started, callback output not yet scheduled), read by the durable
  JOBDIR to forget a request once the engine is done with it;
- ``ExecutionEngine._slot.nextcall``: the engine's "pull from the scheduler"
  loop, woken when a request gate opens;
- ``Scheduler._sdqclass`` (the start-request disk queue class),
  ``Scheduler._mq()`` (a new memory queue), ``Scheduler.mqs`` / ``dqs`` (its
  memory and disk priority queues) and the hooks ``_read_dqs_state`` /
  ``_write_dqs_state``, which the durable scheduler overrides;
- the ``_fingerprinter`` of Scrapy's HTTP cache storages, which the
  render-aware cache storage extends;
- for the status line, its maxima and the memory guard (telemetry):
  ``engine.downloader.active`` (the requests being downloaded),
  ``engine.scraper.slot`` and its ``active_size``, ``max_active_size`` and
  ``needs_backout()`` (the scraper's load; upstream has discussed making
  ``scraper.Slot`` private), and ``engine.scheduler``;
- ``engine.downloader.get_slot_key()`` and ``engine.downloader.slots``: a
  request's downloader slot (its ``download_delay()`` and ``concurrency``),
  which the handler holds where the site sees them (core/pacing/spacing.py);
- ``engine.downloader.middleware.middlewares``: the running downloader
  middlewares (the cookie jar and the render ladder find Scrapy's own there);
- ``Scheduler.dqdir``, ``dqclass`` and ``df``, which the durable scheduler
  (a subclass) reads from itself;
- the exit status of ``scrapy crawl`` (core/exit_status.py): Scrapy's crawler
  process sets ``bootstrap_failed`` (exit status 1) for a crawler that ends
  without a ``spider``, and offers an extension no other way to fail the
  command, so :func:`mark_crawl_failed` clears ``crawler.spider`` once the
  engine has stopped (:func:`crawl_failed` and :func:`crawls_failed` read it
  back, for ``scrapy_cdp_pool.exit_status``); and it tells a shutdown asked by a signal from one an
  error caused by the handler Scrapy installs after the first signal
  (``CrawlerProcessBase._signal_kill``).

:func:`check` runs once when the add-on reads its settings: a Scrapy whose
internals moved stops the crawl at start with :class:`ScrapyInternalsError`
naming the installed version and what is missing, instead of failing (or
quietly doing less) in the middle of a crawl. Nothing else in the plugin
reads a private Scrapy attribute.
"""

from __future__ import annotations

import signal
from collections.abc import Container
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import scrapy
from scrapy import crawler as scrapy_crawler
from scrapy.core import engine as scrapy_engine
from scrapy.core import scraper as scrapy_scraper
from scrapy.core.downloader import Downloader
from scrapy.core.scheduler import Scheduler
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.middleware import MiddlewareManager

from scrapy_cdp_pool.errors import CDPPoolError

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

M = TypeVar("M")

#: the overridable ``Scheduler`` methods the durable scheduler relies on
SCHEDULER_HOOKS = ("_read_dqs_state", "_write_dqs_state", "_mq", "_dq", "_get_start_queue_cls")

#: (class, attributes its ``__init__`` must set, how the plugin reaches them)
ASSIGNED_ATTRIBUTES: tuple[tuple[type, tuple[str, ...], str], ...] = (
    (scrapy_engine.ExecutionEngine, ("downloader", "scraper"), "engine.{}"),
    (Downloader, ("active", "middleware"), "engine.downloader.{}"),
    (MiddlewareManager, ("middlewares",), "engine.downloader.middleware.{}"),
    (scrapy_scraper.Scraper, ("slot",), "engine.scraper.{}"),
    (Scheduler, ("dqdir", "dqclass", "df"), "Scheduler.{}"),
    (
        RobotsTxtMiddleware,
        ("_parsers", "_robotstxt_useragent", "_default_useragent"),
        "RobotsTxtMiddleware.{}",
    ),
)


class ScraperLoad(NamedTuple):
    """The scraper's load, read from ``engine.scraper.slot``."""

    active_size: int
    max_active_size: int
    needs_backout: bool


class ScrapyInternalsError(CDPPoolError, RuntimeError):
    """This Scrapy lacks an internal the plugin reads (message: the Scrapy
    version, the internal, the plugin feature that needs it)."""


def _missing(what: str) -> ScrapyInternalsError:
    return ScrapyInternalsError(
        f"scrapy_cdp_pool cannot run on Scrapy {scrapy.__version__}: {what} is missing "
        "(the plugin reads it; see scrapy_cdp_pool/scrapy_internals.py for what it is "
        "used for); install a Scrapy version allowed by scrapy-cdp-pool's requirements"
    )


def check() -> None:
    """Check, once at start-up, that every internal this module reads exists.

    :raises ScrapyInternalsError: naming the Scrapy version and the internal.
    """
    slot_cls = getattr(scrapy_engine, "_Slot", None)
    if slot_cls is None:
        raise _missing("scrapy.core.engine._Slot")
    # The slot's __init__ is read, not run: making a slot starts a looping call,
    # which needs an installed reactor (a CrawlerProcess's crawl() runs the
    # add-ons before start() installs it). Its code must set both attributes.
    init = getattr(slot_cls, "__init__", None)
    assigned = set(getattr(getattr(init, "__code__", None), "co_names", ()))
    for name in ("inprogress", "nextcall"):
        if name not in assigned:
            raise _missing(f"the engine slot's '{name}' (engine._slot.{name})")
    for name in SCHEDULER_HOOKS:
        if not callable(getattr(Scheduler, name, None)):
            raise _missing(f"scrapy.core.scheduler.Scheduler.{name}")
    for cls, names, reached_as in ASSIGNED_ATTRIBUTES:
        for name in names:
            if name not in _assigned_by_init(cls):
                raise _missing(f"{cls.__name__}'s '{name}' ({reached_as.format(name)})")
    if not isinstance(getattr(scrapy_engine.ExecutionEngine, "scheduler", None), property):
        raise _missing("ExecutionEngine.scheduler (engine.scheduler)")
    # the scraper's slot class, public or (as upstream has discussed) private
    slot_cls = getattr(scrapy_scraper, "Slot", None) or getattr(scrapy_scraper, "_Slot", None)
    if slot_cls is None:
        raise _missing("scrapy.core.scraper.Slot (engine.scraper.slot)")
    for name in ("active_size", "max_active_size"):
        if name not in _assigned_by_init(slot_cls):
            raise _missing(f"the scraper slot's '{name}' (engine.scraper.slot.{name})")
    if not callable(getattr(slot_cls, "needs_backout", None)):
        raise _missing("the scraper slot's 'needs_backout' (engine.scraper.slot.needs_backout)")
    _check_exit_status()


def _check_exit_status() -> None:
    """What :func:`mark_crawl_failed` and :func:`shutdown_signal_received` read."""
    if not callable(getattr(scrapy_crawler.CrawlerProcess, "_signal_kill", None)):
        raise _missing("CrawlerProcess._signal_kill (the exit status of a stopped crawl)")
    if "spider" not in _assigned_by_init(scrapy_crawler.Crawler):
        raise _missing("Crawler's 'spider' (the exit status of a failed crawl)")
    runner = getattr(scrapy_crawler, "CrawlerRunnerBase", scrapy_crawler.CrawlerRunner)
    if "bootstrap_failed" not in _assigned_by_init(runner):
        raise _missing("CrawlerRunnerBase's 'bootstrap_failed' (the exit status of a script)")


def mark_crawl_failed(crawler: Crawler) -> None:
    """After the engine stopped: ``scrapy crawl`` (a ``CrawlerProcess``, or a
    ``CrawlerRunner``'s ``bootstrap_failed``) counts this crawl as failed
    and exits with status 1. The spider stays reachable as
    ``crawler.cdp_pool_closed_spider``."""
    crawler.cdp_pool_closed_spider = crawler.spider  # type: ignore[attr-defined]
    crawler.spider = None


def crawl_failed(crawler: Crawler) -> bool:
    """Whether ``crawler``'s crawl counts as failed, as Scrapy's crawler
    process reads it (no spider once it ended: it never opened one, or
    :func:`mark_crawl_failed`)."""
    return not getattr(crawler, "spider", None)


def crawls_failed(process: Any) -> bool | None:
    """Whether a crawl of ``process`` (a ``CrawlerProcess``,
    ``AsyncCrawlerProcess`` or ``CrawlerRunner``) failed or could not start:
    its ``bootstrap_failed``, which ``scrapy crawl`` turns into exit status 1;
    ``None`` for an object without one."""
    failed = getattr(process, "bootstrap_failed", None)
    return failed if isinstance(failed, bool) else None


def shutdown_signal_received() -> bool:
    """Whether Scrapy's crawler process received SIGINT or SIGTERM (its
    handler is then its ``_signal_kill``, or ignored after a second one)."""
    handler = signal.getsignal(signal.SIGTERM)
    return handler == signal.SIG_IGN or getattr(handler, "__name__", "") == "_signal_kill"


def _assigned_by_init(cls: type) -> set[str]:
    """The attribute names ``cls.__init__``'s code stores (read, not run)."""
    init = getattr(cls, "__init__", None)
    return set(getattr(getattr(init, "__code__", None), "co_names", ()))


def active_download_count(crawler: Crawler) -> int:
    """How many requests the downloader is downloading (0 without an engine)."""
    engine = running_engine(crawler)
    return len(engine.downloader.active) if engine is not None else 0


def free_download_slots(crawler: Crawler, most: int) -> int:
    """How many more requests the engine pulls from the scheduler right now
    (``CONCURRENT_REQUESTS`` less the downloader's active requests; none while
    the scraper makes it back out; at most ``most``, ``CONCURRENT_REQUESTS =
    0`` being unbounded); 0 without an engine."""
    engine = running_engine(crawler)
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    downloader = getattr(engine, "downloader", None)  # an engine stood in by a test: none
    if slot is None or downloader is None or slot.needs_backout():
        return 0
    total: int = downloader.total_concurrency
    if total <= 0:
        return most
    return max(0, min(most, total - len(downloader.active)))


def running_scheduler(crawler: Crawler) -> Any:
    """The engine's scheduler, or None before a spider is open."""
    engine = running_engine(crawler)
    return engine.scheduler if engine is not None else None


def scraper_load(crawler: Crawler) -> ScraperLoad | None:
    """The scraper's load, or None while it has no slot (no spider open)."""
    engine = running_engine(crawler)
    slot = engine.scraper.slot if engine is not None else None
    if slot is None:
        return None
    return ScraperLoad(slot.active_size, slot.max_active_size, bool(slot.needs_backout()))


def running_engine(crawler: Crawler) -> Any:
    """The crawler's engine, ``None`` before the crawl starts (Scrapy 2.19's
    ``Crawler.engine`` raises ``RuntimeError`` then) and for a crawler that
    never crawls (a handler built from it and called directly, as Scrapy's
    handler tests and tools do)."""
    try:
        return crawler.engine
    except RuntimeError:
        return None


def _engine_slot(crawler: Crawler) -> Any:
    """The engine's spider slot, or None before the engine exists or while
    no spider is open."""
    engine = running_engine(crawler)
    if engine is None:
        return None
    if not hasattr(engine, "_slot"):
        raise _missing("ExecutionEngine._slot")
    return engine._slot


def requests_in_progress(crawler: Crawler) -> Container[Request]:
    """Requests the engine holds (from the start of their download to the end
    of their scrape); none once its spider slot is gone."""
    slot = _engine_slot(crawler)
    if slot is None:
        return frozenset()
    requests: Container[Request] = slot.inprogress
    return requests


def wake_engine(crawler: Crawler) -> None:
    """Ask the engine to pull from the scheduler soon (its own loop,
    ``CallLaterOnce``: a call while one is pending is ignored). Nothing
    before the engine has opened a spider."""
    slot = _engine_slot(crawler)
    if slot is not None:
        slot.nextcall.schedule()


def downloader_slot(crawler: Crawler, request: Request) -> tuple[str, Any] | None:
    """Scrapy's downloader slot of ``request`` (its key and the ``Slot``:
    ``download_delay()`` draws the delay Scrapy uses), ``None`` outside a
    running crawl or before the downloader made it. The downloader's
    ``get_slot_key`` and ``slots`` are public, if undocumented."""
    try:
        engine: Any = crawler.engine
    except RuntimeError:  # Scrapy 2.19 raises before the crawl starts
        return None
    downloader = getattr(engine, "downloader", None)
    if downloader is None:
        return None
    key = downloader.get_slot_key(request)
    slot = downloader.slots.get(key)
    return (key, slot) if slot is not None else None


def running_downloader_middleware(crawler: Crawler, cls: type[M]) -> M | None:
    """The crawler's running downloader middleware that is a ``cls`` (or a
    subclass), ``None`` when none is enabled or the engine is not running.
    A scan of the downloader's middleware list (public, if undocumented).
    Outside a running crawl (no engine): ``None``, so the caller does without."""
    engine = running_engine(crawler)
    if engine is None:
        return None
    for middleware in engine.downloader.middleware.middlewares:
        if isinstance(middleware, cls):
            return middleware
    return None


def start_disk_queue_class(scheduler: Scheduler) -> type | None:
    """The scheduler's ``SCHEDULER_START_DISK_QUEUE`` class (None: none)."""
    try:
        queue_cls: type | None = scheduler._sdqclass
    except AttributeError:
        raise _missing("Scheduler._sdqclass") from None
    return queue_cls


def open_memory_only(scheduler: Scheduler) -> None:
    """Give an unopened scheduler a fresh memory queue and no disk queue
    (what ``Scheduler.open`` does without ``JOBDIR``)."""
    scheduler.mqs = scheduler._mq()
    scheduler.dqs = None


def scheduler_queues(scheduler: Any) -> tuple[Any, Any]:
    """The scheduler's memory and disk priority queues (``mqs``, ``dqs``);
    None for a queue it does not have (or a scheduler of another kind)."""
    return getattr(scheduler, "mqs", None), getattr(scheduler, "dqs", None)


def cache_fingerprinter(storage: Any) -> Any:
    """The request fingerprinter an HTTP cache storage keys its entries with
    (Scrapy's filesystem and DBM storages set it at ``open_spider``), or None
    for a storage without one."""
    return getattr(storage, "_fingerprinter", None)


def set_cache_fingerprinter(storage: Any, fingerprinter: Any) -> None:
    """Replace the fingerprinter :func:`cache_fingerprinter` returned."""
    storage._fingerprinter = fingerprinter


def loaded_robots_parser(middleware: RobotsTxtMiddleware, netloc: str) -> Any:
    """The robots.txt parser Scrapy's ``RobotsTxtMiddleware`` has loaded for
    ``netloc`` (``host:port``), ``None`` while it is loading, if it could not
    be loaded, or if the host was never asked about."""
    parser = middleware._parsers.get(netloc)
    return parser if parser is not None and hasattr(parser, "allowed") else None


def robots_user_agent(middleware: RobotsTxtMiddleware) -> str | bytes:
    """The user agent ``RobotsTxtMiddleware`` checks robots.txt rules for
    (``ROBOTSTXT_USER_AGENT``, else ``USER_AGENT``)."""
    return middleware._robotstxt_useragent or middleware._default_useragent
