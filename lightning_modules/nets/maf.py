"""Masked Autoregressive Flow (Papamakarios et al. 2017) for tabular data, as in DP-NF:
blocks of [MADE → reverse permutation → optional ActNorm], standard normal base.

No batch norm (per-example gradients). ActNorm starts data-independently at the identity;
a data-dependent start is set explicitly through :meth:`ActNorm.initialize` (DP-NF's private
initialisation passes noisy statistics there).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from lightning_modules.nets.flow import NormalizingFlow
from lightning_modules.nets.priors import GaussianMixturePrior
from zoo.errors import UserError
from zoo.privacy.layers import MaskedLinear, RowwiseParameters


class MADE(nn.Module):
    """Gaussian MADE (Germain et al. 2015): for each dimension d a shift μ_d and log-scale α_d
    that depend on x_1..x_{d-1} only (natural order)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        if dim < 1 or hidden < 1:
            raise UserError(f"MADE needs dim >= 1 and hidden >= 1, got dim={dim}, hidden={hidden}")
        inputs = torch.arange(1, dim + 1)
        # hidden units get degrees 1..dim-1 cyclically (all 0 → connected to nothing when dim = 1)
        hidden_degrees = torch.arange(hidden) % max(1, dim - 1) + 1
        hidden_mask = (hidden_degrees[:, None] >= inputs[None, :]).float()
        if dim == 1:
            hidden_mask.zero_()
        output_mask = (inputs[:, None] > hidden_degrees[None, :]).float()
        self.dim = dim
        self.input_layer = MaskedLinear(dim, hidden, hidden_mask)
        self.hidden_layer = MaskedLinear(hidden, hidden, (hidden_degrees[:, None] >= hidden_degrees[None, :]).float())
        self.output_layer = MaskedLinear(hidden, 2 * dim, output_mask.repeat(2, 1))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = F.relu(self.hidden_layer(F.relu(self.input_layer(x))))
        shift, log_scale = self.output_layer(h).chunk(2, dim=1)
        return shift, torch.tanh(log_scale)  # bounded scales keep noisy training stable


class ActNorm(RowwiseParameters):
    """Per-feature affine map z = (x − loc) · exp(−log_scale); identity at construction.

    Parameters are read per row so that per-example gradients include the log-determinant."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(dim))
        self.log_scale = nn.Parameter(torch.zeros(dim))

    @torch.no_grad()
    def initialize(self, mean: Tensor, std: Tensor) -> None:
        """Start from given feature statistics, so that the layer's outputs are standardised."""
        self.loc.copy_(mean)
        self.log_scale.copy_(std.clamp_min(1e-3).log())

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        loc, log_scale = self.per_row(self.loc, len(x)), self.per_row(self.log_scale, len(x))
        return (x - loc) * torch.exp(-log_scale), -log_scale.sum(1)

    def inverse(self, z: Tensor) -> Tensor:
        return z * torch.exp(self.log_scale) + self.loc


class MAFBlock(nn.Module):
    """MADE affine transform z_d = (x_d − μ_d) · exp(−α_d), then reversal, then optional ActNorm."""

    def __init__(self, dim: int, hidden: int, actnorm: bool) -> None:
        super().__init__()
        self.made = MADE(dim, hidden)
        self.actnorm = ActNorm(dim) if actnorm else None

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        z, log_det = self._made_and_reverse(x)
        if self.actnorm is not None:
            z, actnorm_log_det = self.actnorm(z)
            log_det = log_det + actnorm_log_det
        return z, log_det

    def before_actnorm(self, x: Tensor) -> Tensor:
        """What the ActNorm sees (for initialising it from data)."""
        return self._made_and_reverse(x)[0]

    def _made_and_reverse(self, x: Tensor) -> tuple[Tensor, Tensor]:
        shift, log_scale = self.made(x)
        return ((x - shift) * torch.exp(-log_scale)).flip(1), -log_scale.sum(1)

    def inverse(self, z: Tensor) -> Tensor:
        if self.actnorm is not None:
            z = self.actnorm.inverse(z)
        z = z.flip(1)
        x = torch.zeros_like(z)
        for d in range(z.shape[1]):  # sequential: x_d needs x_<d
            shift, log_scale = self.made(x)
            x[:, d] = z[:, d] * torch.exp(log_scale[:, d]) + shift[:, d]
        return x


class MAF(NormalizingFlow):
    """``prior_components`` ≥ 2 replaces the standard normal base by a learnt Gaussian mixture."""

    def __init__(
        self, dim: int, blocks: int = 5, hidden: int = 100, actnorm: bool = True, prior_components: int = 0
    ) -> None:
        super().__init__()
        if blocks < 1:
            raise UserError(f"MAF needs at least one block, got {blocks}")
        self.dim = dim
        self.blocks = nn.ModuleList(MAFBlock(dim, hidden, actnorm) for _ in range(blocks))
        self.prior = GaussianMixturePrior(dim, prior_components) if prior_components else None

    @property
    def steps(self) -> nn.ModuleList:
        return self.blocks
