"""Private helpers: modules trained without DP on parts of the private data, never released
(GS-WGAN's critics, DP²-VAE's encoders).

Theorem (add/remove-one neighbouring datasets, N and K public). The K parts come from
``zoo.privacy.partition.assign_parts``: each record's part depends on that record alone, so
adding or removing a record changes one part k and nothing else. The helpers train on a public
schedule: private step t first trains helpers t·m, …, t·m + m − 1 (mod K, m public), each on its
own part, with randomness seeded from t alone, against the released model of the previous steps;
then it queries one helper J_t drawn uniformly at random from secret randomness that nothing else
reads, clips each of the B terms it computes through helper J_t to C, and adds fresh N(0, σ²C²)
noise. So

* helper j's state (parameters and buffers) before step t is a function of part j, the earlier
  outputs and public values only: for j ≠ k it is the same under both neighbours, given the same
  earlier outputs. This needs two more things of the code than the schedule: the query leaves the
  queried helper as it was, and a helper's training leaves every other module as it was
  (``lightning_modules.parts.helper_parts.buffers_restored``; a forward pass in training mode moves
  spectral norm's power-iteration vectors and batch-norm statistics, and a helper whose part is
  empty skips its forward passes);
* given the earlier outputs, step t therefore picks one of K items (the helpers' outputs) uniformly
  and adds Gaussian noise; the neighbour replaces item k only. Every term is clipped to the
  C-ball, so each item's mean lies in a ball of radius R (R = C·√B when the B terms are released
  as separate rows, B3, GS-WGAN's sanitised generator gradients; R = C·B when they are summed,
  B4, a decoder's per-example gradients under a helper encoder, DP²-VAE), and replacing an item
  moves it by at most 2R: the Gaussian at sensitivity 2R, dominated by (N(2R, σ²C²), N(0, σ²C²));
* one item drawn of K is sampling without replacement at rate γ = 1/K under the replace-one
  relation, whose dominating pair is ((1 − γ)·N(0) + γ·N(2R), N(0)) (Zhu, Dong, Wang 2022, Thm.
  11): exactly the Poisson-subsampled Gaussian's pair in its remove direction, which the
  accountants' add/remove analysis of Poisson subsampling at rate γ already covers.

Each step is therefore accounted as one Poisson-subsampled Gaussian at rate γ = 1/K with noise
multiplier σC/(2R) (``step_noise_multiplier``), and since the domination holds given any earlier
outputs, the steps compose adaptively in the accountant (dominating pairs compose: Zhu, Dong,
Wang 2022). The helpers' own training costs nothing separately: what they could leak leaves only
through the steps that query them. Training the *drawn* helper instead (the papers' scheme) would
make every helper's state depend on the secret earlier draws, which the adaptive composition
above does not cover; ``HelperParts`` keeps the public schedule. Whether the refusal of too many
helpers fires depends on the public N and K only; a part that happens to be empty leaves its
helper untrained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import Tensor

from zoo.errors import UserError
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

    def check_dataset_size(self, records: int) -> None:
        """Refuse fewer records than helpers, from the public N and K alone (never from the parts' sizes)."""
        if records < self.parts:
            raise UserError(
                f"{self.parts} helpers for {records} records: each helper needs a part of at least one record on "
                "average; use fewer helpers"
            )

    def split(self, records: Tensor, labels: Tensor, key: bytes | None = None) -> list[tuple[Tensor, Tensor]]:
        """Each helper's records and labels; adding or removing a record changes one part only. A part may
        be empty: its helper then stays as it was initialised."""
        self.check_dataset_size(len(records))
        part = self.assign(records, key)
        return [(records[part == k], labels[part == k]) for k in range(self.parts)]
