"""The conditional generators that methods fit to released statistics (DP-MERF, DP-Kernel), by kind:
``"conv"`` is DP-MERF's official generator, the others GS-WGAN's DCGAN/ResNet generators."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from lightning_modules.nets.conditional_generator import ConditionalConvGenerator
from lightning_modules.nets.dcgan import GENERATORS
from lightning_modules.nets.random_features import labelled_embedding
from zoo.errors import UserError

GENERATOR_KINDS = ("conv", *GENERATORS)


def build_generator(
    kind: str,
    code_dim: int,
    num_classes: int,
    image_shape: Sequence[int],
    hidden: int,
    channels: Sequence[int],
    kernel_size: int,
    batch_norm: bool,
    width: int,
) -> nn.Module:
    """The conditional generator ``kind``: the official DP-MERF one shaped by ``hidden``, ``channels``,
    ``kernel_size`` and ``batch_norm``, or a DCGAN/ResNet one of ``width``."""
    if kind not in GENERATOR_KINDS:
        raise UserError(f"generator must be 'conv' or one of {sorted(GENERATORS)}, got {kind!r}")
    if kind == "conv":
        return ConditionalConvGenerator(code_dim, num_classes, hidden, channels, kernel_size, image_shape, batch_norm)
    return GENERATORS[kind](code_dim, num_classes, width, image_shape)


def generate_conditional(generator: nn.Module, code_dim: int, labels: Tensor, rng: torch.Generator) -> Tensor:
    """One image per label from standard normal codes of ``code_dim`` drawn from ``rng``."""
    device = next(generator.parameters()).device
    code = torch.randn(len(labels), code_dim, generator=rng).to(device)
    return generator(code, labels.to(device))


def generated_embedding(
    generator: nn.Module,
    code_dim: int,
    num_classes: int,
    size: int,
    feature_map: Callable[[Tensor], Tensor],
    device: torch.device | str = "cpu",
) -> Tensor:
    """(1/size)·Σ_j φ(G(z_j, c_j)) ⊗ e_{c_j} over ``size`` standard normal codes and uniformly drawn
    labels: the generated side of the embedding distance that DP-MERF and DP-Kernel minimise."""
    labels = torch.randint(num_classes, (size,), device=device)
    images = generator(torch.randn(size, code_dim, device=device), labels)
    return labelled_embedding(feature_map(images), labels, num_classes) / size
