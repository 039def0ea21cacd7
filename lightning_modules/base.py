"""What every zoo method is: a LightningModule that declares its privacy barrier, what it
releases, and how it generates; ``sample`` adds the checks, seeding and batching."""

from __future__ import annotations

import inspect
import secrets
from typing import Any, ClassVar

import pytorch_lightning as pl
import torch
from torch import Tensor
from tqdm.auto import tqdm

from zoo.privacy import PrivacyBarrier, PrivacyLedgerMixin


class DPGenerativeModel(PrivacyLedgerMixin, pl.LightningModule):
    #: registry name of the method, e.g. "dp-lflow"
    method: ClassVar[str]
    privacy_barrier: ClassVar[PrivacyBarrier]
    #: submodules written to model.safetensors: exactly what the guarantee covers
    released_modules: ClassVar[tuple[str, ...]]
    #: submodules that saw private data without DP; never written anywhere
    never_released: ClassVar[tuple[str, ...]] = ()
    #: number of classes of a class-conditional model, None for an unconditional one
    num_classes: int | None = None
    #: what ``sample`` returns: "images" (n, C, H, W) in [0, 1] or table "rows" (n, features)
    sample_kind: ClassVar[str] = "images"

    def architecture(self) -> dict[str, Any]:
        """Constructor arguments that rebuild this model (stored in config.json)."""
        accepted = inspect.signature(type(self).__init__).parameters
        return {k: v for k, v in self.hparams.items() if k in accepted}

    def finetuning_plan(self, datamodule: pl.LightningDataModule) -> list[tuple[DPGenerativeModel, Any]]:
        """The (module, datamodule) pairs that fine-tuning trains, each under its own DPCallback."""
        return [(self, datamodule)]

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        """``n`` samples (labels given for class-conditional models), drawing all randomness from ``generator``."""
        raise NotImplementedError

    @torch.no_grad()
    def sample(
        self,
        n: int,
        labels: Tensor | list[int] | None = None,
        seed: int | None = None,
        batch_size: int = 1000,
        progress: bool | None = None,
    ) -> Tensor:
        """``n`` samples as a float tensor: images in [0, 1], shape (n, C, H, W), or table rows (n, features).

        Class-conditional models take ``labels`` (one per sample); by default the labels
        cycle through the classes (0, 1, ..., K-1, 0, ...), so every class is equally
        represented and the caller knows which is which. Deterministic for a given seed;
        generated in batches of ``batch_size`` (a progress bar shows when n > batch_size).
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        label_tensor = self._checked_labels(n, labels)
        generator = torch.Generator().manual_seed(seed if seed is not None else secrets.randbits(63))
        was_training = self.training
        self.eval()
        chunks = []
        show = n > batch_size if progress is None else progress
        with tqdm(total=n, desc=f"sampling {self.method}", unit="sample", disable=not show) as bar:
            for start in range(0, n, batch_size):
                count = min(batch_size, n - start)
                batch_labels = None if label_tensor is None else label_tensor[start : start + count]
                chunks.append(self.generate(count, batch_labels, generator).cpu())
                bar.update(count)
        self.train(was_training)
        return torch.cat(chunks)

    def _checked_labels(self, n: int, labels: Tensor | list[int] | None) -> Tensor | None:
        if self.num_classes is None:
            if labels is not None:
                raise ValueError(f"{self.method} is unconditional; it takes no labels")
            return None
        if labels is None:
            return torch.arange(n) % self.num_classes
        labels = torch.as_tensor(labels)
        if labels.dtype.is_floating_point or labels.dim() != 1 or len(labels) != n:
            raise ValueError(f"labels must be {n} integers (one per sample), got shape {tuple(labels.shape)}")
        if labels.numel() and (labels.min() < 0 or labels.max() >= self.num_classes):
            raise ValueError(f"labels must lie in 0..{self.num_classes - 1}, got {labels.min()}..{labels.max()}")
        return labels.long()
