"""What RealNVP and MAF share: a chain of invertible steps on vectors and a standard normal base."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class NormalizingFlow(nn.Module):
    """Subclasses set ``self.dim`` and return their steps from :attr:`steps`; each step maps
    x → (z, log|det ∂z/∂x| per row) and has ``inverse``."""

    dim: int

    @property
    def steps(self) -> nn.ModuleList:
        raise NotImplementedError

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x → z and log|det ∂z/∂x| per row."""
        log_det = torch.zeros(x.shape[0], device=x.device, dtype=x.dtype)
        for step in self.steps:
            x, step_log_det = step(x)
            log_det = log_det + step_log_det
        return x, log_det

    def inverse(self, z: Tensor) -> Tensor:
        for step in reversed(self.steps):
            z = step.inverse(z)
        return z

    def log_prob(self, x: Tensor) -> Tensor:
        """Exact log-density (nats) of each row under the flow with a standard normal base."""
        z, log_det = self(x)
        return -0.5 * (z.square().sum(1) + self.dim * math.log(2 * math.pi)) + log_det
