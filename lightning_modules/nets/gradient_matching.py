"""The gradient-matching distance of dataset condensation and Private Set Generation (official
``match_loss`` with ``dis_metric = 'gm'``): for each weight tensor, the sum over output units of
1 − cos(real, synthetic) between that unit's gradient rows; biases and norm scales (1-D) add nothing."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor


def layerwise_gradient_distance(synthetic: Sequence[Tensor], real: Sequence[Tensor]) -> Tensor:
    """Σ over weight tensors and their output units of 1 − cos; differentiable in ``synthetic``."""
    distance = synthetic[0].new_zeros(())
    for syn, target in zip(synthetic, real, strict=True):
        if syn.dim() == 1:
            continue
        syn, target = syn.reshape(syn.shape[0], -1), target.reshape(target.shape[0], -1)
        cosine = (syn * target).sum(-1) / (syn.norm(dim=-1) * target.norm(dim=-1) + 1e-6)
        distance = distance + (1 - cosine).sum()
    return distance
