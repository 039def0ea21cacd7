"""RealNVP (Dinh et al. 2017) on vectors: affine couplings with alternating masks.

Scales pass through tanh, so the flow has no free-standing parameters outside Linear
layers (ghost clipping applies) and stays numerically tame under noisy gradients.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lightning_modules.nets.flow import NormalizingFlow
from zoo.errors import UserError


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


class RealNVP(NormalizingFlow):
    def __init__(self, dim: int, blocks: int = 9, hidden: int = 200) -> None:
        super().__init__()
        if dim < 2:
            raise UserError(f"RealNVP needs dim >= 2, got {dim}")
        self.dim = dim
        even = (torch.arange(dim) % 2 == 0).float()
        self.couplings = nn.ModuleList(
            AffineCoupling(dim, hidden, even.clone() if i % 2 == 0 else 1 - even) for i in range(blocks)
        )

    @property
    def steps(self) -> nn.ModuleList:
        return self.couplings
