"""The conditional generators that methods fit to released statistics (DP-MERF, DP-Kernel, DP-MEPF), by kind:
``"conv"`` is DP-MERF's official generator, ``"upsampling"`` DP-MEPF's official ResNet generator (no
checkerboard), the others GS-WGAN's DCGAN/ResNet generators."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from lightning_modules.nets.conditional_generator import ConditionalConvGenerator
from lightning_modules.nets.dcgan import GENERATORS
from lightning_modules.nets.random_features import labelled_embedding
from lightning_modules.nets.upsampling_generator import UpsamplingResNetGenerator
from zoo.errors import UserError

GENERATOR_KINDS = ("conv", "upsampling", *GENERATORS)


def build_generator(
    *,
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
    ``kernel_size`` and ``batch_norm``, or an upsampling/DCGAN/ResNet one of ``width``. Keyword-only: nine
    arguments, several of them ints, are too easily passed in the wrong order."""
    if kind not in GENERATOR_KINDS:
        raise UserError(f"generator must be one of {list(GENERATOR_KINDS)}, got {kind!r}")
    if kind == "conv":
        return ConditionalConvGenerator(code_dim, num_classes, hidden, channels, kernel_size, image_shape, batch_norm)
    if kind == "upsampling":
        return UpsamplingResNetGenerator(code_dim, num_classes, width, image_shape)
    return GENERATORS[kind](code_dim, num_classes, width, image_shape)


def generator_from(hparams: Mapping[str, Any]) -> nn.Module:
    """``build_generator`` from a method's hyperparameters, which the three embedding methods name alike
    (``generator``, ``code_dim``, ..., ``generator_width``)."""
    return build_generator(
        kind=hparams["generator"],
        code_dim=hparams["code_dim"],
        num_classes=hparams["num_classes"],
        image_shape=hparams["image_shape"],
        hidden=hparams["hidden"],
        channels=hparams["channels"],
        kernel_size=hparams["kernel_size"],
        batch_norm=hparams["batch_norm"],
        width=hparams["generator_width"],
    )


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
    balanced: bool = False,
) -> Tensor:
    """(1/size)·Σ_j φ(G(z_j, c_j)) ⊗ e_{c_j} over ``size`` standard normal codes and labels drawn uniformly, or
    with ``balanced`` every class equally often (a class's share of the batch then never rescales its
    column): the generated side of the embedding distance that DP-MERF, DP-MEPF and DP-Kernel minimise."""
    if balanced:
        labels = torch.arange(size, device=device) % num_classes
    else:
        labels = torch.randint(num_classes, (size,), device=device)
    images = generator(torch.randn(size, code_dim, device=device), labels)
    return labelled_embedding(feature_map(images), labels, num_classes) / size
