"""Per-feature mean and std of a private table, released once with the Gaussian mechanism (B1).

Each row is clipped to L2 norm B (a public bound) and scaled to u = clip(x)/B, so ‖u‖ ≤ 1;
one row then moves the statistic [Σu, Σu²] by at most sqrt(‖u‖² + Σu⁴) ≤ sqrt(2) in L2 norm
(clipping rows rather than entries keeps this independent of the number of features), and
the release budget of the plan's Release stage noises it with σ·sqrt(2) and enters it in the ledger. The row count n is
treated as public, as DP-SGD's normalisation by q·N already does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from zoo.privacy.mechanisms import scale_rows_to_unit_ball
from zoo.privacy.parameters import check_positive

if TYPE_CHECKING:
    from zoo.privacy import DPBudget

#: smallest released std, as a fraction of the clip bound: the noisy second moment can fall
#: below the squared mean, and a zero scale would make the density degenerate
MIN_STD_FRACTION = 1e-2


@dataclass
class Standardisation:
    mean: Tensor
    std: Tensor
    #: how the statistics were obtained, for config.json and the card
    source: str


def public_standardisation(table: Tensor) -> Standardisation:
    """Exact mean and std, with no privacy cost: only for data whose statistics are public."""
    return Standardisation(
        table.mean(0).float(),
        table.std(0).float(),
        "exact mean and std of the training rows, treated as public (not covered by the guarantee)",
    )


def private_standardisation(
    table: Tensor,
    clip_bound: float,
    noise_multiplier: float,
    budget: DPBudget,
    purpose: str = "standardisation",
) -> Standardisation:
    """Mean and std of ``table`` (rows × features) with Gaussian noise, released through ``budget``."""
    bound = check_positive(clip_bound, "clip_bound")
    rows, features = table.shape
    scaled = scale_rows_to_unit_ball(table.double(), bound)
    sums = torch.cat([scaled.sum(0), scaled.square().sum(0)])
    noisy = budget.release(
        sums,
        math.sqrt(2),
        dataset_size=rows,
        noise_multiplier=noise_multiplier,
        note=f"{purpose}: per-feature [Σu, Σu²] of rows u = x / max(‖x‖, {bound:g})",
    )
    mean = noisy[:features] / rows
    variance = (noisy[features:] / rows - mean.square()).clamp(min=MIN_STD_FRACTION**2)
    return Standardisation(
        (mean * bound).float(),
        (variance.sqrt() * bound).float(),
        f"private: Gaussian mechanism (σ = {noise_multiplier:g}) on sums of rows clipped to L2 norm {bound:g}",
    )
