"""The protocol the validation probes share: the 10,000 validation images that every recipe holds
out (no shipped model protects them), split into a half a method trains on and a half that tests
a CNN trained on its samples. One split for every probe, so their numbers compare."""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.data import load_images, train_validation_split
from zoo.metrics.classifiers import train_and_test
from zoo.privacy.mechanisms import clip_rows


def validation_halves(dataset: str) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
    """(images, labels) of the training half and of the held-out half of the validation split."""
    images, labels = load_images(dataset, train=True)
    _, validation = train_validation_split(len(labels), 10_000, 0)
    order = torch.randperm(10_000, generator=torch.Generator().manual_seed(1))
    first, second = validation[order[:5000]], validation[order[5000:]]
    return (images[first], labels[first]), (images[second], labels[second])


def held_out_cnn_accuracy(samples: Tensor, sample_labels: Tensor, held_out: tuple[Tensor, Tensor]) -> float:
    """CNN CAS (DP-LFlow E.4): a CNN trained on the samples, tested on the held-out half."""
    return train_and_test("cnn", (samples, sample_labels), held_out, 10, seed=0)


def emulated_central_images(
    images: Tensor, labels: Tensor, noise_multiplier: float, clip_norm: float, private_n: int
) -> Tensor:
    """Per-class central images of the training half with the noise the release over ``private_n``
    private images would carry (``lightning_modules.parts.central_images``: std σ·R·√(17/16) on each sum,
    divided by that class's share of ``private_n``), clamped to [0, 1]: (10, C, H, W)."""
    flat = clip_rows(images.flatten(1).double(), clip_norm)
    means = torch.stack([flat[labels == c].mean(0) for c in range(10)])
    counts = torch.stack([(labels == c).sum() for c in range(10)]).double() * private_n / len(labels)
    noise = torch.randn(means.shape, dtype=means.dtype) * noise_multiplier * clip_norm * (17 / 16) ** 0.5
    return (means + noise / counts[:, None]).clamp(0, 1).float().view(10, *images.shape[1:])
