"""LightningDataModules for private image data: Poisson train loaders, plain eval loaders."""

from __future__ import annotations

import pytorch_lightning as pl
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from zoo.data.images import load_images
from zoo.data.partition import train_validation_split
from zoo.data.sources import NamedImages, named_or_refused
from zoo.errors import UserError
from zoo.privacy.parameters import check_sample_rate
from zoo.privacy.record_index import register_named
from zoo.privacy.records import records_identity, tensor_keys
from zoo.privacy.sampling import poisson_loader

#: the held-out validation split every recipe uses; the shipped LeNet extractor trains on it
DEFAULT_VALIDATION_SIZE = 10_000
DEFAULT_SPLIT_SEED = 0


class ImageDataModule(pl.LightningDataModule):
    """A named image set (``zoo.data.sources``: MNIST, Fashion-MNIST, CIFAR-10), optionally one class only (a
    disjoint partition).

    The training split minus ``validation_size`` held-out images is the private data,
    served by Poisson sampling at ``sample_rate``. The validation split is carved from
    the training data with a fixed seed (for model selection; the card says so); the
    official test split stays untouched for evaluation.
    """

    def __init__(
        self,
        dataset: str = "mnist",
        sample_rate: float = 0.1,
        label: int | None = None,
        validation_size: int = DEFAULT_VALIDATION_SIZE,
        split_seed: int = DEFAULT_SPLIT_SEED,
        sampling_seed: int | None = None,
        eval_batch_size: int = 1000,
    ) -> None:
        super().__init__()
        classes = named_or_refused(dataset).num_classes
        if label is not None and label not in range(classes):
            raise UserError(f"label must be a class in 0..{classes - 1} or None, got {label!r}")
        self.dataset = dataset
        self.sample_rate = check_sample_rate(sample_rate)
        self.label = label
        self.validation_size = validation_size
        self.split_seed = split_seed
        self.sampling_seed = sampling_seed
        self.eval_batch_size = eval_batch_size
        self.train_set: TensorDataset | None = None
        self.validation_set: TensorDataset | None = None
        self.test_set: TensorDataset | None = None
        self._kept: Tensor | None = None
        self._registered: str | None = None

    def for_class(self, label: int) -> ImageDataModule:
        """The same data restricted to one class (a disjoint partition), for per-class training."""
        return ImageDataModule(
            self.dataset,
            self.sample_rate,
            label,
            self.validation_size,
            self.split_seed,
            self.sampling_seed,
            self.eval_batch_size,
        )

    @property
    def source(self) -> NamedImages:
        return named_or_refused(self.dataset)

    @property
    def num_classes(self) -> int:
        return self.source.num_classes

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return self.source.image_shape

    @property
    def partition_of(self) -> str | None:
        """The whole private dataset when this module serves one class of it."""
        return None if self.label is None else self._whole_id()

    @property
    def dataset_id(self) -> str:
        whole = self._whole_id()
        return whole if self.label is None else f"{whole}/class={self.label}"

    @property
    def records_identity(self) -> str:
        """Which images of the official training split this module serves (``zoo.privacy.records``: a public
        description), their keys kept in this machine's record index under it, so that a folder holding copies
        of them is found to share them (``zoo.privacy.record_index``)."""
        self.setup()
        identity = records_identity(self._source(), self._kept)
        if identity != self._registered:
            images = self.train_set.tensors[0]
            register_named(identity, tensor_keys(images))
            self._registered = identity
        return identity

    def _source(self) -> str:
        return self.source.records_source("train")

    def _whole_id(self) -> str:
        return f"{self._source()}[seed={self.split_seed},minus-validation={self.validation_size}]"

    def prepare_data(self) -> None:
        load_images(self.dataset, train=True)
        load_images(self.dataset, train=False)

    def setup(self, stage: str | None = None) -> None:
        if self.train_set is not None:
            return
        images, labels = load_images(self.dataset, train=True)
        train_idx, validation_idx = train_validation_split(len(labels), self.validation_size, self.split_seed)
        self._kept = train_idx if self.label is None else train_idx[labels[train_idx] == self.label]
        self.validation_set = self._subset(images[validation_idx], labels[validation_idx])
        self.train_set = self._subset(images[train_idx], labels[train_idx])
        self.test_set = self._subset(*load_images(self.dataset, train=False))

    def _subset(self, images, labels) -> TensorDataset:
        if self.label is not None:
            keep = labels == self.label
            images, labels = images[keep], labels[keep]
        return TensorDataset(images, labels)

    def train_dataloader(self) -> DataLoader:
        micro_batches = self.trainer.accumulate_grad_batches if self.trainer is not None else 1
        return poisson_loader(self.train_set, self.sample_rate, micro_batches=micro_batches, seed=self.sampling_seed)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.validation_set, batch_size=self.eval_batch_size)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, batch_size=self.eval_batch_size)
