"""Private helpers: modules trained without DP on parts of the private data, never released
(GS-WGAN's critics, DP²-VAE's encoders).

Theorem (add/remove-one neighbouring datasets). The K parts come from
``zoo.privacy.partition.assign_parts``: each record's part depends on that record alone, so
adding or removing a record changes one part k and nothing else. Helper k was trained on part
k without DP, so it may change arbitrarily, and with it every term that a step computes
through it. Let a private step query one helper drawn uniformly at random (independently of
everything else), clip each of the B terms it computes through that helper to C, and add
N(0, σ²C²) noise. Then

* the step's output moves only if it queried part k, which happens independently across
  steps with probability γ = 1/K: subsampling at rate γ, as Poisson subsampling of the record;
* when it does, each term may move by 2C (from one point of the C-ball to another), so the
  output moves by at most 2C·√B when the B terms are released as separate rows (B3, GS-WGAN's
  sanitised generator gradients), or 2C·B when they are summed (B4, a decoder's per-example
  gradients under a helper encoder, DP²-VAE).

Each such step is therefore one Poisson-subsampled Gaussian mechanism at rate γ whose noise
multiplier is σC over that sensitivity (``step_noise_multiplier``); the steps compose in the
accountant. The helpers' own training costs nothing separately: everything they could leak
leaves through the steps that query them, which this accounts for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import Tensor

from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.partition import assign_parts

COMBINATIONS = ("rows", "sum")


def step_sensitivity(clip: float, terms: int, combination: str) -> float:
    """L2 sensitivity of a step whose ``terms`` clipped terms may all move by 2C: 2C·√B as rows, 2C·B summed."""
    if combination not in COMBINATIONS:
        raise PrivacyConfigError(f"combination must be one of {COMBINATIONS}, got {combination!r}")
    if terms < 1:
        raise PrivacyConfigError(f"a step needs at least one term, got {terms}")
    return 2 * clip * (math.sqrt(terms) if combination == "rows" else terms)


def step_noise_multiplier(noise_multiplier: float, clip: float, terms: int, combination: str) -> float:
    """The accountant's noise multiplier of a step that adds N(0, (σC)²): σC over its sensitivity."""
    return noise_multiplier * clip / step_sensitivity(clip, terms, combination)


def term_noise_multiplier(accounted: float, terms: int, combination: str) -> float:
    """The inverse of ``step_noise_multiplier``: the σ (noise std over C) that gives a step the accounted z."""
    return accounted * step_sensitivity(1.0, terms, combination)


@dataclass(frozen=True)
class PrivateHelpers:
    """K never-released helpers, one per part of the private data."""

    parts: int

    def __post_init__(self) -> None:
        if isinstance(self.parts, bool) or not isinstance(self.parts, int) or self.parts < 1:
            raise PrivacyConfigError(f"parts must be a positive integer, got {self.parts!r}")

    @property
    def sample_rate(self) -> float:
        """γ = 1/K: the chance that a step queries the helper of a given record."""
        return 1.0 / self.parts

    def assign(self, records: Tensor, key: bytes | None = None) -> Tensor:
        """The part of each record, from that record alone."""
        return assign_parts(records, self.parts, key)

    def split(self, records: Tensor, labels: Tensor, key: bytes | None = None) -> list[tuple[Tensor, Tensor]]:
        """Each helper's records and labels; adding or removing a record changes one part only."""
        part = self.assign(records, key)
        parts = [(records[part == k], labels[part == k]) for k in range(self.parts)]
        empty = sum(len(members) == 0 for members, _ in parts)
        if empty:
            raise ValueError(f"{empty} of {self.parts} helpers got no records from {len(records)}: use fewer helpers")
        return parts
