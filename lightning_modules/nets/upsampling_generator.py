"""DP-MEPF's conditional ResNet generator (official ``ResnetG`` with ``adapt_filter_size``): code and one-hot
label → a small grid of 8·w-ish channels → up-blocks of BN-ReLU-nearest ×2-conv 3-BN-ReLU-conv 3 with a 1×1
convolution on the upsampled skip, halving the channels each time → BN-ReLU-conv 3 → tanh, read as [0, 1].

Nearest-neighbour upsampling followed by 3×3 convolutions draws no checkerboard, where a stride-2
transposed convolution (the DCGAN generator's last layer) leaves a diagonal hatch in every sample. For
a side of 32 the grid is 4×4 and the widths are 8w, 4w, 2w, w (0.80 M parameters at w = 32, the paper's
3.3 M at w = 64); other sides take ⌈log₂(side/4)⌉ up-blocks from a ⌈side/2ⁿ⌉ grid, cropped to the side.
The official first layer, a 4×4 transposed convolution of a 1×1 input, is the same linear map as the
fully connected layer used here. It is fitted to a released statistic and never sees private data, so
batch norm is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from zoo.errors import UserError


class ResidualUpBlock(nn.Module):
    """BN-ReLU-nearest ×2-conv 3-BN-ReLU-conv 3, plus the input upsampled through a 1×1 convolution."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(in_channels),
            nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"),
            nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, 3, padding=1),
        )
        self.skip = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1), nn.Upsample(scale_factor=2, mode="nearest"))

    def forward(self, x: Tensor) -> Tensor:
        return self.body(x) + self.skip(x)


class UpsamplingResNetGenerator(nn.Module):
    def __init__(
        self, code_dim: int = 32, num_classes: int = 10, width: int = 32, image_shape: Sequence[int] = (3, 32, 32)
    ) -> None:
        super().__init__()
        if len(image_shape) != 3 or min(image_shape) < 1 or width < 1:
            raise UserError(
                f"image_shape must be (channels, height, width) and width positive, got {tuple(image_shape)}, {width}"
            )
        self.image_shape = tuple(image_shape)
        self.num_classes = num_classes
        blocks = max(1, math.ceil(math.log2(min(self.image_shape[1:]) / 4)))
        self.grid = tuple(math.ceil(side / 2**blocks) for side in self.image_shape[1:])
        widths = [width * 2 ** (blocks - i) for i in range(blocks + 1)]
        self.first_width = widths[0]
        self.fc = nn.Linear(code_dim + num_classes, math.prod(self.grid) * widths[0])
        self.blocks = nn.Sequential(*(ResidualUpBlock(a, b) for a, b in zip(widths, widths[1:], strict=False)))
        self.output = nn.Sequential(
            nn.BatchNorm2d(widths[-1]), nn.ReLU(), nn.Conv2d(widths[-1], self.image_shape[0], 3, padding=1)
        )

    def forward(self, code: Tensor, labels: Tensor) -> Tensor:
        one_hot = nn.functional.one_hot(labels.long(), self.num_classes).to(code.dtype)
        h = self.fc(torch.cat([code, one_hot], 1)).view(-1, self.first_width, *self.grid)
        image = torch.tanh(self.output(self.blocks(h))) / 2 + 0.5
        return image[:, :, : self.image_shape[1], : self.image_shape[2]]
