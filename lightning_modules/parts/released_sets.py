"""A released set of labelled images in class order, served by ``sample`` (Private Set, P3DM)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F


def balanced_labels(num_classes: int, per_class: int) -> Tensor:
    """The public labels of a class-ordered set: ``per_class`` of each class, in class order."""
    return torch.arange(num_classes).repeat_interleave(per_class)


def images_of_classes(images: Tensor, per_class: int, num_classes: int, labels: Tensor) -> Tensor:
    """For each asked label, the next image of that class in a set holding ``per_class`` images of each
    class in class order (cycling when more are asked): no randomness, so more samples repeat the set."""
    labels = labels.to(images.device)
    occurrence = F.one_hot(labels, num_classes).cumsum(0).gather(1, labels[:, None]).squeeze(1) - 1
    return images[labels * per_class + occurrence % per_class]
