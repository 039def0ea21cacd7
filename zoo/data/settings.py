"""Where data comes from and where prepared copies go: one setting each."""

from __future__ import annotations

import os
from pathlib import Path

from zoo.errors import MissingFileError
from zoo.local_state import CACHE_DIR_ENV, cache_dir

__all__ = ["CACHE_DIR_ENV", "DATA_DIR_ENV", "DataNotFoundError", "cache_dir", "source_data_dir"]

DATA_DIR_ENV = "DPZOO_DATA_DIR"


class DataNotFoundError(MissingFileError):
    """The requested dataset is neither in DPZOO_DATA_DIR nor downloadable."""


def source_data_dir() -> Path | None:
    """A read-only folder in torchvision's layout (``MNIST/raw/*.gz``, ...), from ``DPZOO_DATA_DIR``.

    Unset means: download with torchvision into the cache directory.
    """
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None
