"""Subprocess time limits that bound a hang, not a speed.

A limit is ten times the command's time on 2 idle cores, so a busy laptop or CI runner stays well inside it;
``DPZOO_TEST_TIMEOUT_SCALE`` multiplies every limit for a machine slower still (``DPZOO_TEST_TIMEOUT_SCALE=3
make test``).
"""

from __future__ import annotations

import os

SCALE_VARIABLE = "DPZOO_TEST_TIMEOUT_SCALE"
#: a limit's multiple of the command's idle time
MARGIN = 10


def hang_limit(idle_seconds: float) -> float:
    """The seconds a subprocess may take before the test calls it hung."""
    return MARGIN * idle_seconds * float(os.environ.get(SCALE_VARIABLE, "1"))
