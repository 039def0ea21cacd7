"""Images as torch-fidelity reads them (uint8 RGB), and the digest of those pixels, which names a
reference set wherever its features or statistics are kept."""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor
from torch.utils.data import Dataset


def to_uint8(images: Tensor) -> Tensor:
    """Float images in [0, 1] as uint8, rounded as torch-fidelity's inputs are."""
    return (images.clamp(0, 1) * 255).round().to(torch.uint8)


class Uint8Images(Dataset):
    """Float images in [0, 1] as the uint8 RGB tensors torch-fidelity reads (grey repeated)."""

    def __init__(self, images: Tensor) -> None:
        self.images = to_uint8(images)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> Tensor:
        image = self.images[index]
        return image.expand(3, *image.shape[1:]) if image.shape[0] == 1 else image


def pixels_sha256(images: Tensor) -> str:
    """The sha256 of the images' uint8 pixels (N, C, H, W order)."""
    return hashlib.sha256(to_uint8(images).numpy().tobytes()).hexdigest()
