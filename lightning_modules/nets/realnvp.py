"""RealNVP (Dinh et al. 2017) on vectors: affine couplings with alternating masks.

Scales pass through tanh, so the flow has no free-standing parameters outside Linear
layers (ghost clipping applies) and stays numerically tame under noisy gradients.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class AffineCoupling(nn.Module):
    def __init__(self, dim: int, hidden: int, mask: Tensor) -> None:
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2 * dim)
        )

    def _scale_shift(self, conditioner: Tensor) -> tuple[Tensor, Tensor]:
        scale, shift = self.net(conditioner).chunk(2, dim=1)
        free = 1 - self.mask
        return torch.tanh(scale) * free, shift * free

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x → z and log|det ∂z/∂x| per row."""
        scale, shift = self._scale_shift(x * self.mask)
        return x * torch.exp(scale) + shift, scale.sum(1)

    def inverse(self, z: Tensor) -> Tensor:
        scale, shift = self._scale_shift(z * self.mask)
        return (z - shift) * torch.exp(-scale)


class RealNVP(nn.Module):
    def __init__(self, dim: int, blocks: int = 9, hidden: int = 200) -> None:
        super().__init__()
        if dim < 2:
            raise ValueError(f"RealNVP needs dim >= 2, got {dim}")
        self.dim = dim
        even = (torch.arange(dim) % 2 == 0).float()
        self.couplings = nn.ModuleList(
            AffineCoupling(dim, hidden, even if i % 2 == 0 else 1 - even) for i in range(blocks)
        )

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        log_det = torch.zeros(x.shape[0], device=x.device, dtype=x.dtype)
        for coupling in self.couplings:
            x, block_log_det = coupling(x)
            log_det = log_det + block_log_det
        return x, log_det

    def inverse(self, z: Tensor) -> Tensor:
        for coupling in reversed(self.couplings):
            z = coupling.inverse(z)
        return z

    def log_prob(self, x: Tensor) -> Tensor:
        """Exact log-density (nats) of each row under the flow with a standard normal base."""
        z, log_det = self(x)
        return -0.5 * (z.square().sum(1) + self.dim * math.log(2 * math.pi)) + log_det
