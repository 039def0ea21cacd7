"""Base distributions for flows: the standard normal, or a learnable Gaussian mixture whose
parameters are trained (privately) with the flow, so their cost is the flow's DP-SGD cost."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from zoo.errors import UserError
from zoo.privacy.layers import RowwiseParameters

LOG_2PI = math.log(2 * math.pi)


class StandardNormal(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def log_prob(self, z: Tensor) -> Tensor:
        return -0.5 * (z.square().sum(1) + self.dim * LOG_2PI)

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        return torch.randn(n, self.dim, generator=generator)


class GaussianMixturePrior(RowwiseParameters):
    """K diagonal Gaussians with learnt weights, means and scales. Parameters are read per row,
    so DP-SGD's per-example gradients are exact; means start spread out (seeded, data-independent)."""

    def __init__(self, dim: int, components: int, seed: int = 0) -> None:
        super().__init__()
        if components < 2:
            raise UserError(f"a mixture prior needs at least 2 components, got {components}")
        self.dim = dim
        generator = torch.Generator().manual_seed(seed)
        self.logits = nn.Parameter(torch.zeros(components))
        self.means = nn.Parameter(torch.randn(components, dim, generator=generator))
        self.log_scales = nn.Parameter(torch.zeros(components, dim))

    def log_prob(self, z: Tensor) -> Tensor:
        rows = z.shape[0]
        logits = self.per_row(self.logits, rows)
        means, log_scales = self.per_row(self.means, rows), self.per_row(self.log_scales, rows)
        standardised = (z[:, None, :] - means) * torch.exp(-log_scales)
        per_component = -0.5 * (standardised.square() + LOG_2PI).sum(2) - log_scales.sum(2)
        return torch.logsumexp(per_component + logits.log_softmax(1), 1)

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        with torch.no_grad():
            component = torch.multinomial(self.logits.softmax(0).cpu(), n, replacement=True, generator=generator)
            noise = torch.randn(n, self.dim, generator=generator).to(self.means)
            return self.means[component] + noise * self.log_scales[component].exp()
