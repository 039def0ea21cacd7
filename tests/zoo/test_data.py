"""Image datamodules on the real MNIST / Fashion-MNIST files, read without writing into them."""

import pytest
import torch

from zoo.data import DataNotFoundError, ImageDataModule, class_partition, load_images, train_validation_split
from zoo.privacy.sampling import poisson_batches_of


def snapshot(folder):
    return sorted((str(p), p.stat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.mark.parametrize("name, folder, mean", [("mnist", "MNIST", 0.1307), ("fashion_mnist", "FashionMNIST", 0.2860)])
def test_real_images_load_without_touching_the_source(data_dir, name, folder, mean):
    before = snapshot(data_dir / folder)
    images, labels = load_images(name, train=True)
    assert images.shape == (60_000, 1, 28, 28) and images.dtype == torch.float32
    assert images.mean().item() == pytest.approx(mean, abs=1e-4)
    assert 0.0 <= images.min() and images.max() <= 1.0
    assert labels.shape == (60_000,) and set(labels.unique().tolist()) == set(range(10))
    if name == "mnist":
        assert labels[0] == 5
    assert snapshot(data_dir / folder) == before


def test_datamodule_splits_and_serves_poisson_batches(data_dir):
    module = ImageDataModule("mnist", sample_rate=0.01)
    module.setup()
    assert len(module.train_set) == 50_000 and len(module.validation_set) == 10_000 and len(module.test_set) == 10_000
    batches = poisson_batches_of(module.train_dataloader())
    assert batches is not None and batches.sample_rate == 0.01 and batches.dataset_size == 50_000
    assert module.dataset_id.startswith("mnist/train") and module.partition_of is None


def test_one_class_is_a_disjoint_partition(data_dir):
    parts = [ImageDataModule("mnist", label=c) for c in range(10)]
    for part in parts:
        part.setup()
    assert sum(len(p.train_set) for p in parts) == 50_000
    assert all(bool((p.train_set.tensors[1] == c).all()) for c, p in enumerate(parts))
    assert {p.partition_of for p in parts} == {ImageDataModule("mnist").dataset_id}
    assert len({p.dataset_id for p in parts}) == 10


def test_partition_and_split_helpers():
    labels = torch.tensor([0, 1, 1, 2, 0, 2, 2])
    parts = class_partition(labels)
    assert {k: v.tolist() for k, v in parts.items()} == {0: [0, 4], 1: [1, 2], 2: [3, 5, 6]}
    train, validation = train_validation_split(10, 3, seed=1)
    assert len(validation) == 3 and sorted(train.tolist() + validation.tolist()) == list(range(10))
    assert torch.equal(train_validation_split(10, 3, seed=1)[1], validation)
    with pytest.raises(ValueError, match="validation_size"):
        train_validation_split(10, 10)


def test_missing_files_name_what_is_missing(tmp_path, monkeypatch):
    (tmp_path / "MNIST" / "raw").mkdir(parents=True)
    monkeypatch.setenv("DPZOO_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(DataNotFoundError, match="MNIST/raw/train-images-idx3-ubyte.gz is missing"):
        load_images("mnist", train=True)


def test_bad_names_and_labels():
    with pytest.raises(ValueError, match="unknown image dataset 'cifar'"):
        ImageDataModule("cifar")
    with pytest.raises(ValueError, match="label must be a class in 0..9"):
        ImageDataModule("mnist", label=10)
    with pytest.raises(Exception, match="sample_rate must lie in"):
        ImageDataModule("mnist", sample_rate=0)
