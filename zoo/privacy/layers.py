"""Layers whose exact per-example gradients the ghost-clipping engine knows how to get.

- :class:`MaskedLinear` (MADE): the per-example weight gradient is (δ_i a_iᵀ) ⊙ M, so its
  squared norm is Σ_o δ_io² (M a_i²)_o, still without materialising it.
- :class:`RowwiseParameters`: layers whose parameters act on each row separately (ActNorm,
  parameter-only log-determinants). They read each parameter through :meth:`per_row`, an
  expanded view whose gradient rows *are* the per-example gradients, including the terms
  that never pass through the layer's output.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from zoo.errors import UserError


class MaskedLinear(nn.Linear):
    """Linear layer whose weight is multiplied by a fixed 0/1 mask (out × in)."""

    mask: Tensor

    def __init__(self, in_features: int, out_features: int, mask: Tensor) -> None:
        super().__init__(in_features, out_features)
        if mask.shape != (out_features, in_features):
            raise UserError(f"mask must have shape {(out_features, in_features)}, got {tuple(mask.shape)}")
        self.register_buffer("mask", mask.float())

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight * self.mask, self.bias)


RowCapture = Callable[["RowwiseParameters", nn.Parameter, Tensor], None]


class RowwiseParameters(nn.Module):
    """Base for layers whose parameters act row by row; see the module docstring."""

    #: set by a per-example-gradient engine while it watches this layer
    row_capture: RowCapture | None = None

    def per_row(self, parameter: nn.Parameter, rows: int) -> Tensor:
        """``parameter`` repeated for each of ``rows`` rows (a view, no copy)."""
        expanded = parameter.expand(rows, *parameter.shape)
        if self.row_capture is not None and torch.is_grad_enabled() and self.training and parameter.requires_grad:
            self.row_capture(self, parameter, expanded)
        return expanded
