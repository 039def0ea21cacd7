"""Convolutional encoder/decoder pair (DP-LFlow, Table 5), built from Conv2d and Linear only.

The decoder upsamples with nearest-neighbour interpolation followed by a convolution
rather than a transposed convolution, so every parametrised layer has a cheap exact
per-example gradient norm (ghost clipping). Its output is linear (clamp when sampling): a
final sigmoid under a squared error saturates, and under DP-SGD one MNIST class model
(digit 1 at ε = 10) drove its pre-activations to about −230 and decoded every code to black,
with no gradient left to recover.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from zoo.errors import UserError


def _latent_grid(image_size: int, levels: int) -> int:
    if image_size % (2**levels):
        raise UserError(f"image size {image_size} must be divisible by 2**{levels} for {levels} conv levels")
    return image_size // 2**levels


class ConvEncoder(nn.Module):
    def __init__(self, image_shape: Sequence[int], channels: Sequence[int], latent_dim: int) -> None:
        super().__init__()
        in_channels, height, width = image_shape
        layers: list[nn.Module] = []
        for out_channels in channels:
            layers += [nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1), nn.ReLU()]
            in_channels = out_channels
        grid = _latent_grid(height, len(channels)) * _latent_grid(width, len(channels))
        layers += [nn.Flatten(), nn.Linear(in_channels * grid, latent_dim)]
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class ConvDecoder(nn.Module):
    def __init__(self, image_shape: Sequence[int], channels: Sequence[int], latent_dim: int) -> None:
        super().__init__()
        out_channels, height, width = image_shape
        grid_h, grid_w = _latent_grid(height, len(channels)), _latent_grid(width, len(channels))
        layers: list[nn.Module] = [
            nn.Linear(latent_dim, channels[0] * grid_h * grid_w),
            nn.ReLU(),
            nn.Unflatten(1, (channels[0], grid_h, grid_w)),
        ]
        widths = [*channels, out_channels]
        for level in range(len(channels)):
            layers += [
                nn.Upsample(scale_factor=2, mode="nearest"),
                nn.Conv2d(widths[level], widths[level + 1], 3, padding=1),
            ]
            if level < len(channels) - 1:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, w: Tensor) -> Tensor:
        return self.net(w)
