"""Names a package exports but imports on first use (PEP 562), so that importing the package, and ``dpzoo --help``
or a refusal that needs none of them, stays free of torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str | tuple[str, str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__`` for ``exports``: each name maps to the module that defines it
    under the same name, or to (module, attribute). A name is imported once and then kept in ``namespace``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        target = exports[name]
        module, attribute = target if isinstance(target, tuple) else (target, name)
        value = getattr(importlib.import_module(module), attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__
