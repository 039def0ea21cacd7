"""Methods by name: each method file registers its class (``@register_method``), and the core finds a
method by the name a config.json or recipe gives, without importing any method file by name."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from zoo.errors import UnknownModelError

if TYPE_CHECKING:
    from zoo.methods.contract import DPGenerativeModel

_METHODS: dict[str, type[DPGenerativeModel]] = {}
#: the package whose import registers every method (imported on the first lookup)
METHODS_PACKAGE = "lightning_modules"


def register_method(cls: type[DPGenerativeModel]) -> type[DPGenerativeModel]:
    """Class decorator: make a DPGenerativeModel loadable by its ``method`` name. A name registered twice
    is refused: config.json files and recipes name a method, and a second class under the same name would
    silently replace the first for every checkpoint that names it."""
    if cls.method in _METHODS:
        raise ValueError(
            f"method {cls.method!r} is registered twice: by {_qualified(_METHODS[cls.method])} and by {_qualified(cls)}"
        )
    _METHODS[cls.method] = cls
    return cls


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def registered_methods() -> dict[str, type[DPGenerativeModel]]:
    """Every registered method by name (the methods package is imported on first use)."""
    importlib.import_module(METHODS_PACKAGE)
    return dict(_METHODS)


def method_class(name: str) -> type[DPGenerativeModel]:
    """The class registered as ``name``; ``UnknownModelError`` names the known ones."""
    importlib.import_module(METHODS_PACKAGE)
    try:
        return _METHODS[name]
    except KeyError:
        raise UnknownModelError(f"unknown method {name!r}; known methods: {', '.join(sorted(_METHODS))}") from None


def docs_page(name: str) -> str:
    """The page of docs/methods/ (without ``.md``) that documents method ``name``: its class's ``docs_page``,
    else the method's own name."""
    cls = method_class(name)
    return cls.docs_page or cls.method
