"""Audit round 6, major 2: a use is a named dataset only when its source is in the fixed list, never because of how
its id reads; in-memory tensors and any datamodule without an identity link their uses by content."""

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

import zoo
from tests.zoo.test_shared_records import QUIET, pld_epsilon, trained_merf
from zoo.data import ImageDataModule
from zoo.data.tensors import TensorDataModule
from zoo.privacy.private_data import DeclaredPrivateData
from zoo.privacy.records import disjoint_by_name, named_source, shared_records
from zoo.privacy.summary import privacy_metadata


def faces(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(36, 1, 28, 28, generator=generator), torch.arange(36) % 10


def test_two_uses_of_the_same_tensors_named_like_named_datasets_compose():
    """The audit's reproduction: DP-MERF at ε = 1 on tensors called faces/train[v1], then a fine-tune on the same
    tensors called faces-copy/train[v2]. The two compose, and the fine-tune is calibrated on their composition:
    asked ε = 1 or 2, the PLD composition of both releases is 1 or 2."""
    images, labels = faces()
    first = TensorDataModule(images, labels, "faces/train[v1]")
    second = TensorDataModule(images.clone(), labels.clone(), "faces-copy/train[v2]")
    assert first.records_identity == second.records_identity and first.records_identity.startswith("local:")
    base = trained_merf(first)
    within = zoo.finetune(base, second, target_epsilon=1.0, max_steps=2, **QUIET)  # what the first left of ε = 1
    assert pld_epsilon(within.privacy_ledger.entries) <= 1.01
    tuned = zoo.finetune(trained_merf(first), second, target_epsilon=2.0, max_steps=2, **QUIET)
    ledger = tuned.privacy_ledger
    composed = pld_epsilon(ledger.entries)
    assert 1.9 < composed <= 2.02 and ledger.epsilon(second.dataset_id) < 1.9
    card = privacy_metadata({"privacy_ledger": ledger.to_dict(), "released_modules": list(tuned.released_modules)})
    assert card["epsilon"] == pytest.approx(composed, rel=0.02)


def test_tensors_of_other_images_get_another_identity_and_a_class_its_own():
    images, labels = faces()
    data = TensorDataModule(images, labels, "faces")
    assert TensorDataModule(*faces(seed=1), "faces").records_identity != data.records_identity
    assert data.for_class(3).records_identity not in (data.records_identity, data.for_class(4).records_identity)


def test_tensors_of_a_named_datasets_images_link_with_the_named_dataset(monkeypatch):
    images, labels = faces()
    monkeypatch.setattr("zoo.data.datamodule.load_images", lambda name, train: (images, labels))
    named = ImageDataModule("mnist", validation_size=6)
    named.setup()
    mine = TensorDataModule(named.train_set.tensors[0], named.train_set.tensors[1], "my-digits")
    assert shared_records((named.records_identity, named.dataset_id), (mine.records_identity, mine.dataset_id))


@pytest.mark.parametrize("records", [None, "faces/train#0123456789abcdef"])
def test_no_id_makes_a_named_dataset_unless_its_source_is_in_the_fixed_list(records):
    assert named_source(records, "faces/train[v1]") is None
    assert not disjoint_by_name((records, "faces/train[v1]"), (None, "faces-copy/train[v2]"))
    assert named_source(None, "mnist/train[seed=0,minus-validation=1000]") == "mnist/train"  # entries before identities
    assert disjoint_by_name(("mnist/train#ab", "x"), ("fashion_mnist/train#cd", "y"))


def test_the_fixed_list_names_every_named_dataset_table_and_public_network():
    from lightning_modules.nets.public_networks import PUBLIC_NETWORKS
    from zoo.data.sources import named_sources as image_sources
    from zoo.data.tables import TABLES
    from zoo.privacy.records import named_sources

    expected = {f"{name}/{split}" for name in image_sources() for split in ("train", "test")}
    expected |= {f"{table}/train" for table in TABLES} | {n.training_data_id for n in PUBLIC_NETWORKS.values()}
    assert named_sources() == expected


class BareDataModule(pl.LightningDataModule):
    """A user's own datamodule that declares nothing but its name."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, dataset_id: str) -> None:
        super().__init__()
        self.dataset_id, self.train_set = dataset_id, TensorDataset(images, labels)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=4)


def test_a_datamodule_without_an_identity_is_given_one_from_its_content():
    images, labels = faces()
    bare = DeclaredPrivateData(BareDataModule(images, labels, "faces/train[v1]")).records_identity
    assert bare == TensorDataModule(images, labels, "other").records_identity
