"""A private datamodule declares what it knows (``zoo.privacy.private_data``), and any datamodule trains: a member
it lacks reads as undeclared, so unnamed data is warned about and named by its size, and no records identity or
partition is recorded for it."""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import TensorDataset

from tests.toys import TinyClassifier, ToyData, tiny_trainer
from zoo.data import TensorDataModule
from zoo.privacy import DPCallback, poisson_loader
from zoo.privacy.private_data import ClassPartitionedData, DeclaredPrivateData


class PlainData(pl.LightningDataModule):
    """A datamodule that declares nothing about its data."""

    def __init__(self, dataset: TensorDataset, sample_rate: float) -> None:
        super().__init__()
        self.dataset, self.sample_rate = dataset, sample_rate

    def train_dataloader(self):
        return poisson_loader(self.dataset, self.sample_rate, seed=0)


def images(records: int = 40) -> TensorDataset:
    return TensorDataset(torch.randn(records, 1, 8, 8), torch.arange(records) % 3)


def test_a_datamodule_is_read_for_what_it_declares_and_nothing_else():
    declared = DeclaredPrivateData(ToyData(images(), 0.25, partition_of="toy-whole"))
    assert (declared.dataset_id, declared.partition_of, declared.records_identity) == ("toy", "toy-whole", None)
    assert (declared.image_shape, declared.num_classes) == (None, None)
    assert DeclaredPrivateData(None).dataset_id is None  # a Trainer fitted on bare loaders has no datamodule


def test_a_member_is_read_when_asked_not_before():
    class Counted:
        reads = 0

        @property
        def records_identity(self) -> str:  # zoo.data's hash the records: reading one is not free
            Counted.reads += 1
            return "records"

    declared = DeclaredPrivateData(Counted())
    assert Counted.reads == 0 and declared.dataset_id is None and Counted.reads == 0
    assert declared.records_identity == "records" and Counted.reads == 1


def test_data_that_serves_each_class_on_its_own_is_told_apart():
    data = TensorDataModule(torch.rand(12, 1, 4, 4), torch.arange(12) % 3, "toy-images", sample_rate=0.25)
    assert isinstance(data, ClassPartitionedData)
    assert not isinstance(PlainData(images(), 0.25), ClassPartitionedData)


def test_a_datamodule_that_declares_nothing_trains_as_unnamed_data():
    callback = DPCallback(noise_multiplier=1.0, max_grad_norm=1.0, accountant="rdp")
    with pytest.warns(UserWarning, match="no dataset_id given"):
        tiny_trainer([callback], 2).fit(TinyClassifier(), PlainData(images(), 0.25))
    entry = callback.ledger.entries[-1]
    assert entry.dataset_id == "unnamed(N=40)"
    assert entry.partition_of is None and entry.records_identity.startswith("local:")  # by content (audit round 6)
