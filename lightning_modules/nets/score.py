"""Noise-conditional networks of a score model with classifier guidance (NCSN / P3DM, CPU-sized).

Both take the noise level as an extra input channel holding log σ. The score network returns
s(x, σ) = f(x, σ) / σ, NCSNv2's parametrisation (the network predicts the unit-variance noise
direction); the official P3DM/DPGEN MNIST model is an NCSN RefineNet of width 128, this is a small
U-Net of ``width`` channels for CPUs.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F


def _with_noise_level(x: Tensor, sigma: Tensor) -> Tensor:
    level = sigma.log().view(-1, 1, 1, 1).expand(len(x), 1, *x.shape[2:])
    return torch.cat([x, level], dim=1)


def _block(inputs: int, outputs: int, stride: int = 1) -> nn.Sequential:
    groups = min(8, outputs)
    return nn.Sequential(
        nn.Conv2d(inputs, outputs, 3, stride, 1),
        nn.GroupNorm(groups, outputs),
        nn.SiLU(),
        nn.Conv2d(outputs, outputs, 3, 1, 1),
        nn.GroupNorm(groups, outputs),
        nn.SiLU(),
    )


class ScoreUNet(nn.Module):
    """A two-level U-Net: ``width`` channels at full size, 2·``width`` at 1/2 and 1/4 size."""

    def __init__(self, channels: int = 1, width: int = 32) -> None:
        super().__init__()
        self.level_full = _block(channels + 1, width)
        self.level_half = _block(width, 2 * width, stride=2)
        self.level_quarter = _block(2 * width, 2 * width, stride=2)
        self.up_half = _block(4 * width, 2 * width)
        self.up_full = _block(3 * width, width)
        self.out = nn.Conv2d(width, channels, 3, 1, 1)

    def forward(self, x: Tensor, sigma: Tensor) -> Tensor:
        full = self.level_full(_with_noise_level(x, sigma))
        half = self.level_half(full)
        quarter = self.level_quarter(half)
        up = F.interpolate(quarter, size=half.shape[2:], mode="nearest")
        up = self.up_half(torch.cat([up, half], dim=1))
        up = F.interpolate(up, size=full.shape[2:], mode="nearest")
        up = self.up_full(torch.cat([up, full], dim=1))
        return self.out(up) / sigma.view(-1, 1, 1, 1)


class NoisyClassifier(nn.Module):
    """p(y | x, σ) on noisy images: the guidance classifier of classifier-guided sampling."""

    def __init__(self, channels: int, num_classes: int, width: int = 32) -> None:
        super().__init__()
        self.features = nn.Sequential(_block(channels + 1, width, stride=2), _block(width, 2 * width, stride=2))
        self.head = nn.Linear(2 * width, num_classes)

    def forward(self, x: Tensor, sigma: Tensor) -> Tensor:
        return self.head(self.features(_with_noise_level(x, sigma)).mean(dim=(2, 3)))
