"""Random Fourier features of a Gaussian kernel (Rahimi & Recht 2007), as DP-MERF uses them, and of
a mixture of Gaussian kernels (DP-Kernel's multi-bandwidth kernel).

φ(x) = [cos(Wx), sin(Wx)] / sqrt(D/2) with the D/2 rows of W drawn from N(0, I/width²), so
φ(x)·φ(x') ≈ exp(−‖x − x'‖² / (2·width²)) and ‖φ(x)‖ = 1 for every x: the norm bound that
DP-MERF's sensitivity argument rests on. Computed in the input's dtype: in float32 the norm is 1
only up to rounding (measured 1 + 4e-6), so a release embeds float64 inputs, where it is 1 within
1e-12. W is public randomness, drawn from a seed.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from zoo.errors import UserError
from zoo.privacy.mechanisms.kernel_embedding import labelled_embedding

__all__ = ["RandomFourierFeatures", "fourier_features", "labelled_embedding", "mixture_frequencies"]


class RandomFourierFeatures(nn.Module):
    def __init__(self, in_features: int, features: int, width: float, seed: int = 0) -> None:
        super().__init__()
        if features < 2 or features % 2:
            raise UserError(f"features must be an even number >= 2, got {features}")
        if not width > 0:
            raise UserError(f"width must be > 0, got {width}")
        generator = torch.Generator().manual_seed(seed)
        frequencies = torch.randn(features // 2, in_features, generator=generator) / width
        self.register_buffer("frequencies", frequencies, persistent=False)  # regenerated from the seed
        self.features = features

    def forward(self, x: Tensor) -> Tensor:
        """(n, in_features) → (n, features) in x's dtype, each row of L2 norm 1 (up to that dtype's rounding)."""
        return fourier_features(x, self.frequencies)


def fourier_features(x: Tensor, frequencies: Tensor) -> Tensor:
    """φ(x) = [cos(Wx), sin(Wx)] / sqrt(m) for the m rows of W: (n, ...) → (n, 2m) in x's dtype, each row
    of L2 norm 1 (up to that dtype's rounding)."""
    projection = x.flatten(1) @ frequencies.T.to(x.dtype)
    return torch.cat([projection.cos(), projection.sin()], 1) / math.sqrt(len(frequencies))


def mixture_frequencies(
    in_features: int,
    count: int,
    widths: tuple[float, ...],
    generator: torch.Generator,
    device: torch.device | None = None,
) -> Tensor:
    """``count`` frequencies of the mixture kernel (1/L)·Σ_l exp(−‖x − x'‖² / (2·width_l²)): each row picks
    one of the L widths uniformly and is drawn from N(0, I/width²), the mixture's spectral density."""
    if count < 1 or not widths or min(widths) <= 0:
        raise UserError(f"need count >= 1 and positive widths, got {count} and {widths}")
    scales = torch.tensor(widths, dtype=torch.float32)[torch.randint(len(widths), (count,), generator=generator)]
    frequencies = torch.randn(count, in_features, generator=generator) / scales[:, None]
    return frequencies.to(device)
