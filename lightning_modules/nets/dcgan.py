"""GS-WGAN's networks (official ``GeneratorDCGAN``, ``GeneratorResNet`` and ``DiscriminatorDCGAN``),
with the width (``model_dim``) and the image shape (C, H, W) as parameters. For 1×28×28 they are
exactly the official networks; other shapes scale each spatial dimension on its own.

DCGAN generator: code and one-hot label → FC to 4×4×4w → deconv 5 (cropped to 7×7) → deconv 5 →
deconv 8 stride 2 → sigmoid, pixel norm after each ReLU; for a side H, with s = ⌈(H − 6)/2⌉ (11 for
28), the grid is s − 7, the first deconv is cropped to s − 4 and the output, 2s + 6 ≥ H, to H (H ≥ 21).
ResNet generator (the paper's): FC to g×g×4w with g = ⌈(H + 2)/8⌉ → three upsampling residual
blocks → conv 3 → sigmoid, cropped to H×W (8g − 2 = 30 for 28), spectrally normalised. Critic:
three 5×5 stride-2 convs (w, 2w, 4w) to ⌈H/8⌉×⌈W/8⌉ → linear score plus a projection term
⟨embed(y), h⟩, spectrally normalised.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.nn.utils.parametrizations import spectral_norm

from zoo.errors import UserError

#: the smallest side the DCGAN generator makes (its FC grid is at least 1×1)
DCGAN_MIN_SIDE = 21


def pixel_norm(x: Tensor, eps: float = 1e-8) -> Tensor:
    """Normalise each position's feature vector to unit root mean square (official ``pixel_norm``)."""
    return x * torch.rsqrt(x.square().mean(dim=1, keepdim=True) + eps)


def transposed_convolution(x: Tensor, layer: nn.ConvTranspose2d) -> Tensor:
    """``layer(x)``; on the CPU as a matrix product and ``fold``, the same sum in another order: for the last
    deconv's one output channel, the CPU's ConvTranspose2d kernel is 6× slower, a third of a GS-WGAN critic
    update (which draws a fresh batch for every one of its steps)."""
    if x.device.type != "cpu" or layer.padding != (0, 0) or layer.dilation != (1, 1) or layer.groups != 1:
        return layer(x)
    shapes = zip(x.shape[2:], layer.stride, layer.kernel_size, strict=True)
    sides = [(side - 1) * stride + kernel for side, stride, kernel in shapes]
    columns = torch.matmul(layer.weight.flatten(1).t(), x.flatten(2))  # (N, C_out·k·k, H·W)
    images = nn.functional.fold(columns, sides, layer.kernel_size, stride=layer.stride)
    return images if layer.bias is None else images + layer.bias.view(1, -1, 1, 1)


def _image_shape(image_shape: Sequence[int]) -> tuple[int, ...]:
    if len(image_shape) != 3 or min(image_shape) < 1:
        raise UserError(f"image_shape must be (channels, height, width), got {tuple(image_shape)}")
    return tuple(image_shape)


class DCGANGenerator(nn.Module):
    def __init__(
        self, code_dim: int = 10, num_classes: int = 10, width: int = 64, image_shape: Sequence[int] = (1, 28, 28)
    ) -> None:
        super().__init__()
        self.image_shape = _image_shape(image_shape)
        sides = self.image_shape[1:]
        if min(sides) < DCGAN_MIN_SIDE:
            raise UserError(
                f"the DCGAN generator makes images of at least {DCGAN_MIN_SIDE}×{DCGAN_MIN_SIDE} pixels, got "
                f"{sides[0]}×{sides[1]}: resize the data (the datamodule's image_size)"
            )
        last = [math.ceil((side - 6) / 2) for side in sides]  # input side of the last deconv
        self.crop = tuple(side - 4 for side in last)  # the first deconv's output, cropped (7×7 for 28)
        self.grid = tuple(side - 3 for side in self.crop)
        self.num_classes, self.width = num_classes, width
        self.fc = nn.Linear(code_dim + num_classes, math.prod(self.grid) * 4 * width)
        self.deconv1 = nn.ConvTranspose2d(4 * width, 2 * width, 5)
        self.deconv2 = nn.ConvTranspose2d(2 * width, width, 5)
        self.deconv3 = nn.ConvTranspose2d(width, self.image_shape[0], 8, stride=2)

    def forward(self, code: Tensor, labels: Tensor) -> Tensor:
        one_hot = nn.functional.one_hot(labels.long(), self.num_classes).to(code.dtype)
        h = self.fc(torch.cat([code, one_hot], 1)).view(-1, 4 * self.width, *self.grid)
        h = pixel_norm(torch.relu(h))
        h = pixel_norm(torch.relu(self.deconv1(h)[:, :, : self.crop[0], : self.crop[1]]))
        h = pixel_norm(torch.relu(self.deconv2(h)))
        images = torch.sigmoid(transposed_convolution(h, self.deconv3))
        return images[:, :, : self.image_shape[1], : self.image_shape[2]]


class UpsamplingBlock(nn.Module):
    """Official ``GBlock``: pixel norm, ×2 upsampling, two 3×3 convs, and a 1×1 shortcut."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = spectral_norm(nn.Conv2d(channels, channels, 3, padding=1))
        self.conv2 = spectral_norm(nn.Conv2d(channels, channels, 3, padding=1))
        self.shortcut = spectral_norm(nn.Conv2d(channels, channels, 1))

    def forward(self, x: Tensor) -> Tensor:
        x = nn.functional.interpolate(x, scale_factor=2)
        h = self.conv2(torch.relu(pixel_norm(self.conv1(pixel_norm(x)))))
        return h + self.shortcut(x)


class ResNetGenerator(nn.Module):
    def __init__(
        self, code_dim: int = 10, num_classes: int = 10, width: int = 64, image_shape: Sequence[int] = (1, 28, 28)
    ) -> None:
        super().__init__()
        self.image_shape = _image_shape(image_shape)
        self.grid = tuple(math.ceil((side + 2) / 8) for side in self.image_shape[1:])
        self.num_classes, self.width = num_classes, width
        self.fc = spectral_norm(nn.Linear(code_dim + num_classes, math.prod(self.grid) * 4 * width))
        self.blocks = nn.Sequential(*(UpsamplingBlock(4 * width) for _ in range(3)))
        self.output = spectral_norm(nn.Conv2d(4 * width, self.image_shape[0], 3))

    def forward(self, code: Tensor, labels: Tensor) -> Tensor:
        one_hot = nn.functional.one_hot(labels.long(), self.num_classes).to(code.dtype)
        h = self.fc(torch.cat([code, one_hot], 1)).view(-1, 4 * self.width, *self.grid)
        h = self.output(self.blocks(pixel_norm(torch.relu(h))))
        return torch.sigmoid(h)[:, :, : self.image_shape[1], : self.image_shape[2]]


GENERATORS = {"dcgan": DCGANGenerator, "resnet": ResNetGenerator}


class DCGANCritic(nn.Module):
    def __init__(
        self,
        num_classes: int = 10,
        width: int = 64,
        spectral: bool = True,
        image_shape: Sequence[int] = (1, 28, 28),
    ) -> None:
        super().__init__()
        self.image_shape = _image_shape(image_shape)
        wrap = spectral_norm if spectral else (lambda layer: layer)
        self.features = nn.Sequential(
            wrap(nn.Conv2d(self.image_shape[0], width, 5, stride=2, padding=2)),
            nn.ReLU(),
            wrap(nn.Conv2d(width, 2 * width, 5, stride=2, padding=2)),
            nn.ReLU(),
            wrap(nn.Conv2d(2 * width, 4 * width, 5, stride=2, padding=2)),
            nn.ReLU(),
            nn.Flatten(),
        )
        # each conv halves a side, rounding up: 28 → 14 → 7 → 4
        features = 4 * width * math.prod(math.ceil(side / 8) for side in self.image_shape[1:])
        self.score = wrap(nn.Linear(features, 1))
        self.label_embedding = wrap(nn.Embedding(num_classes, features))

    def forward(self, images: Tensor, labels: Tensor) -> Tensor:
        h = self.features(images.view(-1, *self.image_shape))
        return (self.score(h).squeeze(1) + (self.label_embedding(labels) * h).sum(1)).view(-1)

    def gradient_penalty(self, real: Tensor, fake: Tensor, labels: Tensor) -> Tensor:
        """WGAN-GP: (‖∇ critic‖ − 1)² at random interpolates of real and generated images."""
        mix = torch.rand(len(real), 1, 1, 1, device=real.device)
        interpolates = (mix * real + (1 - mix) * fake).requires_grad_(True)
        (gradients,) = torch.autograd.grad(self(interpolates, labels).sum(), interpolates, create_graph=True)
        return (gradients.flatten(1).norm(dim=1) - 1).square().mean()
