"""Images held as uint8 (a quarter of float32's memory) and served as float in [0, 1]."""

from __future__ import annotations

from torch import Tensor
from torch.utils.data import Dataset


class ByteImages(Dataset):
    """uint8 images (N, C, H, W) with int64 labels; items and batches come out as float in [0, 1].

    ``take`` serves a whole Poisson batch with one indexing (``zoo.privacy.sampling``); ``tensors``
    converts everything at once, for methods that read the whole private set (a one-shot release)."""

    def __init__(self, images: Tensor, labels: Tensor) -> None:
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        return self.images[index].float().div_(255), self.labels[index]

    def take(self, indices: Tensor) -> tuple[Tensor, Tensor]:
        return self.images[indices].float().div_(255), self.labels[indices]

    @property
    def tensors(self) -> tuple[Tensor, Tensor]:
        return self.take(slice(None))
