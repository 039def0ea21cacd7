"""A conditional VAE (DP²-VAE's): a conv encoder of the image and its label planes to a Gaussian
posterior, and a conv decoder of the code and the one-hot label to Bernoulli pixel logits.

Built from the Conv2d/Linear blocks of :mod:`lightning_modules.nets.autoencoder`, so every
parametrised layer has exact ghost-clipping norms."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_modules.nets.autoencoder import ConvDecoder, ConvEncoder


class ConditionalEncoder(nn.Module):
    """q(z | x, y): the image with one constant plane per class, to (mean, log-variance)."""

    def __init__(self, image_shape: Sequence[int], channels: Sequence[int], latent_dim: int, classes: int) -> None:
        super().__init__()
        in_channels, height, width = image_shape
        self.classes = classes
        self.net = ConvEncoder((in_channels + classes, height, width), channels, 2 * latent_dim)

    def forward(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        planes = F.one_hot(y, self.classes).to(x.dtype)[:, :, None, None].expand(-1, -1, *x.shape[2:])
        mean, log_variance = self.net(torch.cat([x, planes], 1)).chunk(2, dim=1)
        return mean, log_variance.clamp(-10, 10)


class ConditionalDecoder(nn.Module):
    """p(x | z, y): pixel logits from the code and the one-hot label."""

    def __init__(self, image_shape: Sequence[int], channels: Sequence[int], latent_dim: int, classes: int) -> None:
        super().__init__()
        self.classes = classes
        self.net = ConvDecoder(image_shape, channels, latent_dim + classes)

    def forward(self, z: Tensor, y: Tensor) -> Tensor:
        return self.net(torch.cat([z, F.one_hot(y, self.classes).to(z.dtype)], 1))


def negative_elbo(encoder: ConditionalEncoder, decoder: ConditionalDecoder, x: Tensor, y: Tensor) -> Tensor:
    """Per-example −ELBO in nats: Bernoulli reconstruction loss plus KL(q(z|x,y) ‖ N(0, I))."""
    mean, log_variance = encoder(x, y)
    z = mean + (0.5 * log_variance).exp() * torch.randn_like(mean)
    logits = decoder(z, y)
    reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(1).sum(1)
    kl = 0.5 * (mean.square() + log_variance.exp() - 1 - log_variance).sum(1)
    return reconstruction + kl
