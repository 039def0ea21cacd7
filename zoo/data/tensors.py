"""Private data already in memory (your own images or rows with labels) as a datamodule:
Poisson-sampled train loader, a dataset id for the ledger, and per-class parts."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from zoo.errors import UserError
from zoo.privacy.parameters import check_sample_rate
from zoo.privacy.records import content_identity
from zoo.privacy.sampling import poisson_loader


class TensorDataModule(pl.LightningDataModule):
    """``inputs`` (n, ...) with integer ``labels`` (n,), served by Poisson sampling at ``sample_rate``.

    ``dataset_id`` names the data in the privacy ledger and on the card: words only, never taken for a named
    dataset. Which records the uses touch is ``records_identity``, from the inputs' content (the local record
    index), so that two uses of the same tensors compose whatever they are named. ``for_class(k)`` serves class
    k only, a disjoint partition of it (for per-class models)."""

    def __init__(
        self,
        inputs: Tensor,
        labels: Tensor,
        dataset_id: str,
        sample_rate: float = 0.1,
        label: int | None = None,
        sampling_seed: int | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(inputs, Tensor) or not isinstance(labels, Tensor):
            raise UserError("inputs and labels must be tensors")
        if labels.dim() != 1 or len(labels) != len(inputs) or labels.dtype.is_floating_point:
            raise UserError(f"labels must be {len(inputs)} integers, one per input; got shape {tuple(labels.shape)}")
        if not dataset_id:
            raise UserError("dataset_id must name the data: the privacy ledger records it")
        self.inputs, self.labels, self.whole_id = inputs, labels.long(), dataset_id
        self.sample_rate = check_sample_rate(sample_rate)
        self.label = label
        self.sampling_seed = sampling_seed
        keep = torch.ones(len(labels), dtype=torch.bool) if label is None else self.labels == label
        self.train_set = TensorDataset(inputs[keep], self.labels[keep])
        self._records_identity: str | None = None

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        """(C, H, W) when the inputs are images."""
        return tuple(self.inputs.shape[1:]) if self.inputs.dim() == 4 else None

    @property
    def num_classes(self) -> int:
        return int(self.labels.max()) + 1 if len(self.labels) else 0

    @property
    def dataset_id(self) -> str:
        return self.whole_id if self.label is None else f"{self.whole_id}/class={self.label}"

    @property
    def records_identity(self) -> str | None:
        """The served records by the local record index (``zoo.privacy.records.content_identity``): the same images
        in a folder, a named dataset or other tensors get linked, and the name publishes nothing about them."""
        if self._records_identity is None:
            self._records_identity = content_identity(self.train_set)
        return self._records_identity

    @property
    def partition_of(self) -> str | None:
        return None if self.label is None else self.whole_id

    def for_class(self, label: int) -> TensorDataModule:
        return TensorDataModule(self.inputs, self.labels, self.whole_id, self.sample_rate, label, self.sampling_seed)

    def train_dataloader(self) -> DataLoader:
        micro_batches = self.trainer.accumulate_grad_batches if self.trainer is not None else 1
        return poisson_loader(self.train_set, self.sample_rate, micro_batches=micro_batches, seed=self.sampling_seed)
