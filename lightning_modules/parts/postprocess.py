"""Smooth-then-sharpen post-processing of generated images (DP-LFlow, section 4).

It touches only generated images, never data, so it costs no privacy (post-processing
theorem). Smoothing removes the speckle that DP noise leaves around the object; an unsharp
mask then restores the edges the smoothing and the autoencoder blurred.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

from zoo.errors import UserError


@dataclass(frozen=True)
class SmoothSharpen:
    #: standard deviation (pixels) of the Gaussian smoothing
    smooth_sigma: float = 0.5
    #: unsharp-mask strength: out = s + amount · (s − blur(s)) for the smoothed image s
    sharpen_amount: float = 1.0
    #: standard deviation (pixels) of the blur inside the unsharp mask
    sharpen_sigma: float = 1.0

    def __post_init__(self) -> None:
        for name in ("smooth_sigma", "sharpen_sigma"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 < value <= 5:
                raise UserError(f"{name} must be a number in (0, 5] pixels, got {value!r}")
        if not isinstance(self.sharpen_amount, int | float) or not 0 <= self.sharpen_amount <= 10:
            raise UserError(f"sharpen_amount must be a number in [0, 10], got {self.sharpen_amount!r}")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> SmoothSharpen:
        unknown = set(config) - {"smooth_sigma", "sharpen_amount", "sharpen_sigma"}
        if unknown:
            raise UserError(f"unknown smooth-sharpen settings {sorted(unknown)}")
        return cls(**config)

    def __call__(self, images: Tensor) -> Tensor:
        """Images in [0, 1], shape (n, C, H, W) → the same shape, still in [0, 1]."""
        smoothed = gaussian_blur(images, self.smooth_sigma)
        sharpened = smoothed + self.sharpen_amount * (smoothed - gaussian_blur(smoothed, self.sharpen_sigma))
        return sharpened.clamp(0, 1)


def gaussian_blur(images: Tensor, sigma: float) -> Tensor:
    """Separable Gaussian blur per channel, repeating the border pixels (kernel radius 3σ)."""
    radius = max(1, math.ceil(3 * sigma))
    offsets = torch.arange(-radius, radius + 1, dtype=images.dtype, device=images.device)
    kernel = torch.exp(-0.5 * (offsets / sigma) ** 2)
    kernel = kernel / kernel.sum()
    channels = images.shape[1]
    horizontal = kernel.view(1, 1, 1, -1).repeat(channels, 1, 1, 1)
    vertical = kernel.view(1, 1, -1, 1).repeat(channels, 1, 1, 1)
    out = F.conv2d(F.pad(images, (radius, radius, 0, 0), mode="replicate"), horizontal, groups=channels)
    return F.conv2d(F.pad(out, (0, 0, radius, radius), mode="replicate"), vertical, groups=channels)
