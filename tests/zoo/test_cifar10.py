"""CIFAR-10 as a named dataset: offline from the image-folder tree in DPZOO_DATA_DIR, in the official
label order, with the 10,000-image validation split carved from train as for MNIST; the shipped
CIFAR-10 checkpoints sample 3×32×32 images and their ε recomputes from the ledger with dp-accounting."""

import json
import os
from pathlib import Path

import dp_accounting
import pytest
import torch
from dp_accounting import pld

import zoo
from tests.conftest import SHARED_DATA
from tests.folders import write_image_folder
from tests.zoo.test_checkpoints import SHIPPED
from zoo.data import DataNotFoundError, ImageDataModule, load_images
from zoo.data.sources import named_or_refused
from zoo.release.registry import checkpoints_dir


@pytest.fixture
def tiny_tree(tmp_path, monkeypatch):
    """A CIFAR-10-shaped tree of a few images per class, standing for the real one."""
    write_image_folder(
        tmp_path / "cifar10-images", 3, (32, 32), classes=named_or_refused("cifar10").classes, test_per_class=2
    )
    monkeypatch.setenv("DPZOO_DATA_DIR", str(tmp_path))
    return tmp_path


def test_cifar10_reads_the_image_folder_tree_in_label_order(tiny_tree):
    images, labels = load_images("cifar10", train=False)
    assert images.shape == (20, 3, 32, 32) and images.dtype == torch.float32
    assert labels.tolist() == [k for k in range(10) for _ in range(2)]
    data = ImageDataModule("cifar10", validation_size=6)
    data.setup()
    assert data.image_shape == (3, 32, 32) and len(data.train_set) == 24 and len(data.validation_set) == 6
    assert data.dataset_id == "cifar10/train[seed=0,minus-validation=6]"


def test_a_tree_with_other_classes_is_refused(tmp_path, monkeypatch):
    write_image_folder(tmp_path / "cifar10-images", 2, (32, 32), test_per_class=1)
    monkeypatch.setenv("DPZOO_DATA_DIR", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="airplane"):
        load_images("cifar10", train=True)


REAL_DATA = Path(os.environ.get("DPZOO_DATA_DIR") or SHARED_DATA)


@pytest.mark.skipif(
    not (REAL_DATA / "cifar10-images").is_dir(),
    reason=f"the CIFAR-10 image-folder tree is not in {REAL_DATA}; set DPZOO_DATA_DIR",
)
def test_the_real_test_split_has_1000_images_per_class(monkeypatch):
    monkeypatch.setenv("DPZOO_DATA_DIR", str(REAL_DATA))
    images, labels = load_images("cifar10", train=False)
    assert images.shape == (10_000, 3, 32, 32)
    assert torch.bincount(labels).tolist() == [1000] * 10


CIFAR_CHECKPOINTS = [
    model_id
    for model_id in SHIPPED
    if any(
        entry["dataset_id"].startswith("cifar10/")
        for entry in json.loads((checkpoints_dir() / model_id / "config.json").read_text())["privacy_ledger"]["entries"]
    )
]


@pytest.mark.parametrize("model_id", CIFAR_CHECKPOINTS)
def test_cifar10_checkpoint_samples_colour_images_and_its_epsilon_recomputes(model_id):
    model = zoo.load(model_id)
    assert model.sample(20, seed=0).shape == (20, 3, 32, 32)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    for entry in model.privacy_ledger.entries:
        gaussian = dp_accounting.GaussianDpEvent(entry.noise_multiplier)
        accountant.compose(dp_accounting.PoissonSampledDpEvent(entry.sample_rate, gaussian), entry.steps)
    (guarantee,) = model.privacy_ledger.guarantees().values()
    independent = accountant.get_epsilon(guarantee["delta"])
    # the card's PRV ε is an upper bound: never below the PLD's, and not loose by more than 2%
    assert independent <= guarantee["epsilon"] * (1 + 1e-3) and guarantee["epsilon"] <= independent * 1.02
