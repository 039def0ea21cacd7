"""The ConvNet of dataset condensation and Private Set Generation (official ``ConvNet``):
``depth`` × [conv 3×3 (``width``), instance norm, ReLU, avgpool 2] + a linear layer.

Instance norm is ``GroupNorm(width, width)``, with affine parameters as in the official code
(``norm_affine``); it normalises each example on its own, so per-example gradients exist. Opacus'
grad samplers cover the affine version; without it the zoo's ghost clipping covers the whole net, and
the clipped pass over a batch costs half as much on a CPU. A 28×28 image is padded to 32×32 by the
first convolution (padding 3), as there.
"""

from __future__ import annotations

from torch import Tensor, nn

from zoo.errors import UserError


class ConvNet(nn.Module):
    def __init__(
        self,
        image_shape: tuple[int, int, int],
        num_classes: int,
        width: int = 128,
        depth: int = 3,
        norm_affine: bool = True,
    ) -> None:
        super().__init__()
        channels, height, width_px = image_shape
        first_padding = 3 if height == 28 else 1
        layers: list[nn.Module] = []
        sizes = [side + 2 * (first_padding - 1) for side in (height, width_px)]
        for d in range(depth):
            layers += [
                nn.Conv2d(channels if d == 0 else width, width, 3, padding=first_padding if d == 0 else 1),
                nn.GroupNorm(width, width, affine=norm_affine),
                nn.ReLU(),
                nn.AvgPool2d(2),
            ]
            sizes = [side // 2 for side in sizes]
        if min(sizes) < 1:
            raise UserError(
                f"a depth-{depth} ConvNet pools a {height}×{width_px} image to nothing; use a smaller depth"
            )
        self.features = nn.Sequential(*layers, nn.Flatten())
        self.classifier = nn.Linear(width * sizes[0] * sizes[1], num_classes)

    def forward(self, images: Tensor) -> Tensor:
        return self.classifier(self.features(images))
