"""Where dpzoo keeps what belongs to this machine only: prepared data, and the privacy ledger's local record
index with its secret key (``zoo.privacy.record_index``). Nothing here is ever published."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "DPZOO_CACHE_DIR"


def cache_dir() -> Path:
    """Writable folder for this machine's state (``DPZOO_CACHE_DIR``, default ``~/.cache/dpzoo``)."""
    value = os.environ.get(CACHE_DIR_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dpzoo"
    )
    return Path(value).expanduser()
