"""Where data comes from and where prepared copies go: one setting each."""

from __future__ import annotations

import os
from pathlib import Path

from zoo.errors import MissingFileError

DATA_DIR_ENV = "DPZOO_DATA_DIR"
CACHE_DIR_ENV = "DPZOO_CACHE_DIR"


class DataNotFoundError(MissingFileError):
    """The requested dataset is neither in DPZOO_DATA_DIR nor downloadable."""


def source_data_dir() -> Path | None:
    """A read-only folder in torchvision's layout (``MNIST/raw/*.gz``, ...), from ``DPZOO_DATA_DIR``.

    Unset means: download with torchvision into the cache directory.
    """
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    """Writable folder for prepared data (``DPZOO_CACHE_DIR``, default ``~/.cache/dpzoo``)."""
    value = os.environ.get(CACHE_DIR_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dpzoo"
    )
    return Path(value).expanduser()
