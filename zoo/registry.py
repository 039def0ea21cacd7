"""Methods by name, and where pretrained model ids live (repo checkpoints, then the Hub)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from zoo.layout import CONFIG_NAME

_METHODS: dict[str, type] = {}
CHECKPOINTS_ENV = "DPZOO_CHECKPOINTS_DIR"
#: the shipped checkpoints inside an installed wheel (setup.py maps the repository's checkpoints/ to it)
CHECKPOINTS_PACKAGE = "dpzoo_checkpoints"
#: the package whose import registers every method (imported on the first lookup)
METHODS_PACKAGE = "lightning_modules"


class UnknownModelError(LookupError):
    """A method name or model id that the zoo does not know."""


def register_method(cls: type) -> type:
    """Class decorator: make a DPGenerativeModel loadable by its ``method`` name."""
    _METHODS[cls.method] = cls
    return cls


def registered_methods() -> dict[str, type]:
    """Every registered method by name (the methods package is imported on first use)."""
    importlib.import_module(METHODS_PACKAGE)
    return dict(_METHODS)


def method_class(name: str) -> type:
    importlib.import_module(METHODS_PACKAGE)
    try:
        return _METHODS[name]
    except KeyError:
        raise UnknownModelError(f"unknown method {name!r}; known methods: {sorted(_METHODS)}") from None


def checkpoints_dir() -> Path:
    """Shipped checkpoints: ``DPZOO_CHECKPOINTS_DIR``, else ``checkpoints/`` of this repository's
    checkout, else the copy an installed wheel holds (package ``CHECKPOINTS_PACKAGE``, see setup.py)."""
    value = os.environ.get(CHECKPOINTS_ENV)
    if value:
        return Path(value)
    checkout = Path(__file__).resolve().parents[1] / "checkpoints"
    if checkout.is_dir():
        return checkout
    installed = importlib.util.find_spec(CHECKPOINTS_PACKAGE)
    return Path(next(iter(installed.submodule_search_locations))) if installed else checkout


def model_index() -> dict[str, dict[str, Any]]:
    """Published model ids with their Hub repository, method, dataset and (ε, δ)."""
    return json.loads(resources.files("zoo").joinpath("model_index.json").read_text())


def shipped_ids() -> list[str]:
    """Ids of the checkpoints in ``checkpoints_dir()``: the folders holding a config.json."""
    return sorted(path.parent.name for path in checkpoints_dir().glob(f"*/{CONFIG_NAME}"))


def model_ids() -> list[str]:
    """Every id ``zoo.load`` knows, shipped first, then published. Names only: no config is read, no
    guarantee computed, so an unknown id is answered at once."""
    shipped = shipped_ids()
    return shipped + [model_id for model_id in model_index() if model_id not in shipped]
