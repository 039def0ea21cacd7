"""The gap ratio: how far a generator's samples are from real images, block by block, in the features
DP-MEPF matches, measured against the floor that fresh real data sets (issue 52's diagnostic).

For each chosen block, with every record's output scaled to norm 1 and per-class means μ_c,

    gap = Σ_c ‖μ_c(real A) − μ_c(samples)‖² / Σ_c ‖μ_c(real A) − μ_c(real B)‖²

over two disjoint halves A and B of held-out real images and as many samples per class as B holds: 1 is
indistinguishable from fresh real data, larger is further away. Inception-free and cheap (one pass of the
feature network), so it can choose settings and show convergence. Compute it on validation images only.
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightning_modules.nets.perceptual_features import PerceptualFeatures

CHUNK = 500


@torch.no_grad()
def class_means_per_block(features: PerceptualFeatures, images: Tensor, labels: Tensor, classes: int) -> list[Tensor]:
    """Per block, the (classes, block features) means of the unit-norm block outputs."""
    sums: list[Tensor] | None = None
    for start in range(0, len(images), CHUNK):
        one_hot = torch.nn.functional.one_hot(labels[start : start + CHUNK].long(), classes).double()
        blocks = features.unit_blocks(images[start : start + CHUNK])
        chunk_sums = [one_hot.T @ block.double() for block in blocks]
        sums = chunk_sums if sums is None else [a + b for a, b in zip(sums, chunk_sums, strict=True)]
    counts = torch.bincount(labels.long(), minlength=classes).double().clamp_min(1)[:, None]
    assert sums is not None, "no images"
    return [total / counts for total in sums]


def gap_ratios(a: list[Tensor], b: list[Tensor], s: list[Tensor]) -> list[float]:
    """The gap ratio of each block, in order, from the class means (``class_means_per_block``) of real halves
    ``a`` and ``b`` and of the samples ``s``."""
    return [
        float((mean_a - mean_s).square().sum() / (mean_a - mean_b).square().sum())
        for mean_a, mean_b, mean_s in zip(a, b, s, strict=True)
    ]
