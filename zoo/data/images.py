"""MNIST and Fashion-MNIST as in-memory tensors, through torchvision's loaders."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from torch import Tensor
from torchvision import datasets

from zoo.data.settings import DATA_DIR_ENV, cache_dir, source_data_dir

IMAGE_DATASETS = {"mnist": datasets.MNIST, "fashion_mnist": datasets.FashionMNIST}


class DataNotFoundError(FileNotFoundError):
    """The requested dataset is neither in DPZOO_DATA_DIR nor downloadable."""


def load_images(name: str, train: bool) -> tuple[Tensor, Tensor]:
    """Images as float32 in [0, 1] with shape (N, 1, 28, 28), and int64 labels."""
    dataset_class = _dataset_class(name)
    root = cache_dir() / "torchvision"
    source = source_data_dir()
    if source is not None:
        _decompress_into(source, root, dataset_class)
        dataset = dataset_class(str(root), train=train, download=False)
    else:
        try:
            dataset = dataset_class(str(root), train=train, download=True)
        except Exception as error:  # network failures come in many types
            raise DataNotFoundError(
                f"could not download {name} into {root} ({error}). Without internet, point "
                f"{DATA_DIR_ENV} at a folder holding {dataset_class.__name__}/raw/*.gz (torchvision's layout)."
            ) from error
    images = dataset.data.unsqueeze(1).float().div_(255.0)
    return images, dataset.targets.long()


def _dataset_class(name: str) -> type[datasets.MNIST]:
    try:
        return IMAGE_DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown image dataset {name!r}; known: {sorted(IMAGE_DATASETS)}") from None


def _decompress_into(source: Path, root: Path, dataset_class: type[datasets.MNIST]) -> None:
    """Copy torchvision's raw files, uncompressed, from the read-only source into ``root``."""
    source_raw = source / dataset_class.__name__ / "raw"
    target_raw = root / dataset_class.__name__ / "raw"
    for url_and_md5 in dataset_class.resources:
        gz_name = url_and_md5[0].rsplit("/", 1)[-1]
        target = target_raw / gz_name.removesuffix(".gz")
        if target.exists():
            continue
        gz_file = source_raw / gz_name
        if not gz_file.exists():
            raise DataNotFoundError(
                f"{gz_file} is missing: {DATA_DIR_ENV}={source} must hold {dataset_class.__name__}/raw/{gz_name} "
                "(torchvision's layout); unset it to download instead."
            )
        target_raw.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        with gzip.open(gz_file, "rb") as compressed, open(partial, "wb") as plain:
            shutil.copyfileobj(compressed, plain)
        partial.replace(target)
