"""What RealNVP and MAF share: a chain of invertible steps on vectors and a base distribution
(standard normal unless a subclass sets ``self.prior``)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lightning_modules.nets.priors import StandardNormal


class NormalizingFlow(nn.Module):
    """Subclasses set ``self.dim`` and return their steps from :attr:`steps`; each step maps
    x → (z, log|det ∂z/∂x| per row) and has ``inverse``."""

    dim: int
    prior: nn.Module | None = None

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

    @property
    def base(self) -> nn.Module:
        return self.prior if self.prior is not None else StandardNormal(self.dim)

    def log_prob(self, x: Tensor) -> Tensor:
        """Exact log-density (nats) of each row under the flow."""
        z, log_det = self(x)
        return self.base.log_prob(z) + log_det

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """``n`` rows: base samples drawn from ``generator``, mapped back through the steps."""
        return self.inverse(self.base.sample(n, generator).to(next(self.parameters()).device))
