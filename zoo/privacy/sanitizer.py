"""B3: sanitise per-sample gradients flowing into a tensor (GS-WGAN's generator output).

The tensor is the identity in the forward pass. In the backward pass the upstream
gradient of each row (one generated sample) is clipped to ``max_grad_norm`` and
N(0, σ²C²) is added to every row, as in the official GS-WGAN code. Each sanitised row is
one subsampled Gaussian mechanism at the critic's sampling rate γ, which is how the
DPCallback accounts it (steps = rows sanitised).
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.privacy.randomness import private_generator
from zoo.privacy.validation import check_positive


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
