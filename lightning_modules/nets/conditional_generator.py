"""DP-MERF's conditional convolutional generator (official ``ConvCondGen``): code and one-hot
label → FC → FC to a 7×7 map → bilinear ×2, conv → bilinear ×2, conv → sigmoid.

It never sees private data (it is fitted to a released statistic), so batch norm is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from zoo.errors import UserError


class ConditionalConvGenerator(nn.Module):
    def __init__(
        self,
        code_dim: int = 5,
        num_classes: int = 10,
        hidden: int = 200,
        channels: Sequence[int] = (16, 8),
        kernel_size: int = 5,
        image_shape: Sequence[int] = (1, 28, 28),
        batch_norm: bool = True,
    ) -> None:
        super().__init__()
        out_channels, height, width = image_shape
        if height % 4 or width % 4:
            raise UserError(f"image height and width must be divisible by 4, got {height}×{width}")
        first, second = channels
        self.code_dim, self.num_classes = code_dim, num_classes
        self.grid = (first, height // 4, width // 4)
        grid_size = first * self.grid[1] * self.grid[2]
        self.fc = nn.Sequential(
            nn.Linear(code_dim + num_classes, hidden),
            nn.BatchNorm1d(hidden) if batch_norm else nn.Identity(),
            nn.ReLU(),
            nn.Linear(hidden, grid_size),
            nn.BatchNorm1d(grid_size) if batch_norm else nn.Identity(),
        )
        padding = (kernel_size - 1) // 2
        self.convs = nn.Sequential(
            nn.UpsamplingBilinear2d(scale_factor=2),
            nn.Conv2d(first, second, kernel_size, padding=padding),
            nn.ReLU(),
            nn.UpsamplingBilinear2d(scale_factor=2),
            nn.Conv2d(second, out_channels, kernel_size, padding=padding),
            nn.Sigmoid(),
        )

    def forward(self, code: Tensor, labels: Tensor) -> Tensor:
        one_hot = nn.functional.one_hot(labels.long(), self.num_classes).to(code.dtype)
        hidden = self.fc(torch.cat([code, one_hot], 1))
        return self.convs(hidden.reshape(-1, *self.grid))
