"""Random Fourier features of a Gaussian kernel (Rahimi & Recht 2007), as DP-MERF uses them.

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


class RandomFourierFeatures(nn.Module):
    def __init__(self, in_features: int, features: int, width: float, seed: int = 0) -> None:
        super().__init__()
        if features < 2 or features % 2:
            raise ValueError(f"features must be an even number >= 2, got {features}")
        if not width > 0:
            raise ValueError(f"width must be > 0, got {width}")
        generator = torch.Generator().manual_seed(seed)
        frequencies = torch.randn(features // 2, in_features, generator=generator) / width
        self.register_buffer("frequencies", frequencies, persistent=False)  # regenerated from the seed
        self.features = features

    def forward(self, x: Tensor) -> Tensor:
        """(n, in_features) → (n, features) in x's dtype, each row of L2 norm 1 (up to that dtype's rounding)."""
        projection = x.flatten(1) @ self.frequencies.T.to(x.dtype)
        return torch.cat([projection.cos(), projection.sin()], 1) / math.sqrt(self.features // 2)


def labelled_embedding(features: Tensor, labels: Tensor, num_classes: int) -> Tensor:
    """Σ_i φ(x_i) ⊗ e_{y_i}, shape (features, classes): each record's term has L2 norm ‖φ(x_i)‖ = 1."""
    one_hot = nn.functional.one_hot(labels.long(), num_classes).to(features.dtype)
    return features.T @ one_hot
