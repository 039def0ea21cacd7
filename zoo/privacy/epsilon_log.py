"""How often DPCallback may spend time computing ε for the progress bar.

One exact PRV evaluation costs 0.1-0.2 s, more than the steps between two logs on a fast GPU, so ε is
computed at a logging step only while its computations so far took less than a share of the stage's
time (or less than a grace period). The clock is a parameter so that the rule can be tested without
depending on the machine's speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: the share of the stage's time ε's computations may take
EPSILON_SHARE = 0.05
#: the seconds ε's computations may always take
EPSILON_GRACE_S = 1.0


class EpsilonLogTimer:
    """Times ε's computations and says whether one more fits within their share of the stage."""

    def __init__(
        self,
        share: float = EPSILON_SHARE,
        grace_s: float = EPSILON_GRACE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.share, self.grace_s, self.clock = share, grace_s, clock
        self._started = clock()
        self._spent = 0.0

    def start(self) -> None:
        """The stage begins: the share counts from now."""
        self._started, self._spent = self.clock(), 0.0

    def allows_another(self) -> bool:
        return self._spent < max(self.grace_s, self.share * (self.clock() - self._started))

    def timed(self, compute: Callable[[], float]) -> float:
        """``compute()``, its time added to what ε's computations have taken."""
        start = self.clock()
        value = compute()
        self._spent += self.clock() - start
        return value
