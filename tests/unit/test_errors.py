"""One root exception for the package (issue 28): every exception class the
plugin defines is a CDPPoolError; users import them from scrapy_cdp_pool.errors."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import scrapy_cdp_pool
from scrapy_cdp_pool import errors


def test_every_exception_is_a_cdp_pool_error() -> None:
    classes = [
        obj
        for obj in vars(errors).values()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == errors.__name__
    ]
    assert len(classes) > 40
    assert [c.__name__ for c in classes if not issubclass(c, errors.CDPPoolError)] == []


def test_every_exception_of_the_package_has_the_one_root() -> None:
    outside = []
    for info in pkgutil.walk_packages(scrapy_cdp_pool.__path__, "scrapy_cdp_pool."):
        module = importlib.import_module(info.name)
        outside += [
            f"{info.name}.{name}"
            for name, obj in vars(module).items()
            if inspect.isclass(obj)
            and issubclass(obj, BaseException)
            and obj.__module__ == module.__name__
            and not issubclass(obj, errors.CDPPoolError)
        ]
    assert outside == []
