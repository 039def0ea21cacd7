"""B3: sanitise per-sample gradients flowing into a tensor (GS-WGAN's generator output).

The tensor is the identity in the forward pass. In the backward pass the upstream gradient
of each row (one generated sample) is clipped to C and N(0, σ²C²) is added to every entry,
as in the official GS-WGAN code. What the official code accounts is not what holds.

Theorem (add/remove-one neighbouring datasets; records assigned to K critics by a draw that
depends on each record alone, ``zoo.privacy.partition``; each step queries one critic drawn
uniformly, independently of everything else). The critic a step queries was trained without
DP on its subset, so adding or removing a record of that subset may change the critic and
with it the gradient of *every* row of the step: each clipped row moves by at most 2C
(thesis Theorem 2.4.1), the B×d matrix of the step by at most 2C·√B in L2 norm. The step
touches a given record only when it queries that record's critic, which happens
independently across steps with probability γ = 1/K. So each step is one Poisson-subsampled
Gaussian mechanism at rate γ with noise multiplier z = σC / (2C·√B) = σ / (2√B), and T steps
compose as T such mechanisms: that is what the DPCallback records (``accounted_noise_multiplier``)
and what the accountant sees. The official code instead composes T·B mechanisms at rate γ
and sensitivity C, which understates ε by orders of magnitude.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from zoo.privacy.randomness import private_generator
from zoo.privacy.validation import check_positive


def accounted_noise_multiplier(row_noise_multiplier: float, rows_per_step: int) -> float:
    """z = σ / (2√B): the step's noise std σC over its L2 sensitivity 2C·√B (see the module docstring)."""
    return row_noise_multiplier / (2 * math.sqrt(rows_per_step))


def row_noise_multiplier(accounted: float, rows_per_step: int) -> float:
    """σ = 2√B·z: the per-row noise multiplier that gives the step the accounted multiplier z."""
    return accounted * 2 * math.sqrt(rows_per_step)


def sanitizer_ledger_parameters(accounted: float, clip: float, rows_per_step: int) -> dict[str, Any]:
    """What an auditor needs to check the sensitivity argument of a B3 ledger entry."""
    return {
        "rows_per_step": rows_per_step,
        "row_noise_multiplier": row_noise_multiplier(accounted, rows_per_step),
        "l2_sensitivity": 2 * clip * math.sqrt(rows_per_step),
        "analysis": "one Poisson-subsampled Gaussian per step at the critic sampling rate; every row of the step "
        "may change by 2C when the queried critic holds the record (zoo.privacy.sanitizer)",
    }


class GradientSanitizer:
    def __init__(
        self,
        noise_multiplier: float,
        max_grad_norm: float,
        loss_reduction: str = "mean",
        generator: torch.Generator | None = None,
    ) -> None:
        self.noise_multiplier = float(noise_multiplier)
        self.max_grad_norm = check_positive(max_grad_norm, "max_grad_norm")
        if loss_reduction not in ("mean", "sum"):
            raise ValueError(f"loss_reduction must be 'mean' or 'sum', got {loss_reduction!r}")
        self.loss_reduction = loss_reduction
        self.generator = generator or private_generator()
        self.rows_sanitized = 0

    def __call__(self, tensor: Tensor) -> Tensor:
        if tensor.dim() < 1:
            raise ValueError("the sanitised tensor needs a batch dimension (one row per generated sample)")
        return _Sanitize.apply(tensor, self)

    def sanitize_gradient(self, grad: Tensor) -> Tensor:
        rows = grad.shape[0]
        scale = rows if self.loss_reduction == "mean" else 1
        per_row = grad * scale
        norms = per_row.flatten(1).norm(dim=1)
        clip = (self.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        per_row = per_row * clip.view(-1, *([1] * (grad.dim() - 1)))
        noise = torch.randn(grad.shape, generator=self.generator, device=grad.device, dtype=grad.dtype)
        self.rows_sanitized += rows
        return (per_row + self.noise_multiplier * self.max_grad_norm * noise) / scale


class _Sanitize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor: Tensor, sanitizer: GradientSanitizer) -> Tensor:  # type: ignore[override]
        ctx.sanitizer = sanitizer
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        return ctx.sanitizer.sanitize_gradient(grad), None
