"""GS-WGAN's networks for 28×28 images (official ``GeneratorDCGAN``, ``GeneratorResNet`` and
``DiscriminatorDCGAN``), with the width (``model_dim``) as a parameter.

DCGAN generator: code and one-hot label → FC to 4×4×4w → deconv 5 (cropped to 7×7) → deconv 5 →
deconv 8 stride 2 → sigmoid, pixel norm after each ReLU. ResNet generator (the paper's): FC to
4×4×4w → three upsampling residual blocks → conv 3 → sigmoid, cropped to 28×28, spectrally
normalised. Critic: three 5×5 stride-2 convs (w, 2w, 4w) → linear score plus a projection term
⟨embed(y), h⟩, spectrally normalised.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.parametrizations import spectral_norm

IMAGE_SHAPE = (1, 28, 28)


def pixel_norm(x: Tensor, eps: float = 1e-8) -> Tensor:
    """Normalise each position's feature vector to unit root mean square (official ``pixel_norm``)."""
    return x * torch.rsqrt(x.square().mean(dim=1, keepdim=True) + eps)


class DCGANGenerator(nn.Module):
    def __init__(self, code_dim: int = 10, num_classes: int = 10, width: int = 64) -> None:
        super().__init__()
        self.num_classes, self.width = num_classes, width
        self.fc = nn.Linear(code_dim + num_classes, 4 * 4 * 4 * width)
        self.deconv1 = nn.ConvTranspose2d(4 * width, 2 * width, 5)
        self.deconv2 = nn.ConvTranspose2d(2 * width, width, 5)
        self.deconv3 = nn.ConvTranspose2d(width, IMAGE_SHAPE[0], 8, stride=2)

    def forward(self, code: Tensor, labels: Tensor) -> Tensor:
        one_hot = nn.functional.one_hot(labels.long(), self.num_classes).to(code.dtype)
        h = self.fc(torch.cat([code, one_hot], 1)).view(-1, 4 * self.width, 4, 4)
        h = pixel_norm(torch.relu(h))
        h = pixel_norm(torch.relu(self.deconv1(h)[:, :, :7, :7]))
        h = pixel_norm(torch.relu(self.deconv2(h)))
        return torch.sigmoid(self.deconv3(h))


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
    def __init__(self, code_dim: int = 10, num_classes: int = 10, width: int = 64) -> None:
        super().__init__()
        self.num_classes, self.width = num_classes, width
        self.fc = spectral_norm(nn.Linear(code_dim + num_classes, 4 * 4 * 4 * width))
        self.blocks = nn.Sequential(*(UpsamplingBlock(4 * width) for _ in range(3)))
        self.output = spectral_norm(nn.Conv2d(4 * width, IMAGE_SHAPE[0], 3))

    def forward(self, code: Tensor, labels: Tensor) -> Tensor:
        one_hot = nn.functional.one_hot(labels.long(), self.num_classes).to(code.dtype)
        h = pixel_norm(torch.relu(self.fc(torch.cat([code, one_hot], 1)).view(-1, 4 * self.width, 4, 4)))
        return torch.sigmoid(self.output(self.blocks(h)))[:, :, :-2, :-2]


GENERATORS = {"dcgan": DCGANGenerator, "resnet": ResNetGenerator}


class DCGANCritic(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 64, spectral: bool = True) -> None:
        super().__init__()
        wrap = spectral_norm if spectral else (lambda layer: layer)
        self.features = nn.Sequential(
            wrap(nn.Conv2d(IMAGE_SHAPE[0], width, 5, stride=2, padding=2)),
            nn.ReLU(),
            wrap(nn.Conv2d(width, 2 * width, 5, stride=2, padding=2)),
            nn.ReLU(),
            wrap(nn.Conv2d(2 * width, 4 * width, 5, stride=2, padding=2)),
            nn.ReLU(),
            nn.Flatten(),
        )
        self.score = wrap(nn.Linear(4 * 4 * 4 * width, 1))
        self.label_embedding = wrap(nn.Embedding(num_classes, 4 * 4 * 4 * width))

    def forward(self, images: Tensor, labels: Tensor) -> Tensor:
        h = self.features(images.view(-1, *IMAGE_SHAPE))
        return (self.score(h).squeeze(1) + (self.label_embedding(labels) * h).sum(1)).view(-1)

    def gradient_penalty(self, real: Tensor, fake: Tensor, labels: Tensor) -> Tensor:
        """WGAN-GP: (‖∇ critic‖ − 1)² at random interpolates of real and generated images."""
        mix = torch.rand(len(real), 1, 1, 1, device=real.device)
        interpolates = (mix * real + (1 - mix) * fake).requires_grad_(True)
        (gradients,) = torch.autograd.grad(self(interpolates, labels).sum(), interpolates, create_graph=True)
        return (gradients.flatten(1).norm(dim=1) - 1).square().mean()
