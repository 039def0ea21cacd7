"""The named image datasets (MNIST, Fashion-MNIST, CIFAR-10) as in-memory tensors: torchvision's
loaders online; offline, ``DPZOO_DATA_DIR`` in torchvision's layout (MNIST, Fashion-MNIST) or as an
image-folder tree (``cifar10-images/{train,test}/<class>/*.jpg``, read by ``zoo.data.folders``)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import torch
from torch import Tensor
from torchvision import datasets

from zoo.data.byte_images import ByteImages
from zoo.data.folders import folder_parts, read_part
from zoo.data.settings import DATA_DIR_ENV, DataNotFoundError, cache_dir, source_data_dir
from zoo.errors import UserError

IMAGE_DATASETS = {"mnist": datasets.MNIST, "fashion_mnist": datasets.FashionMNIST, "cifar10": datasets.CIFAR10}
IMAGE_SHAPES = {"mnist": (1, 28, 28), "fashion_mnist": (1, 28, 28), "cifar10": (3, 32, 32)}
#: datasets that come, offline, as an image-folder tree under DPZOO_DATA_DIR, and their classes in label order
FOLDER_TREES = {"cifar10": "cifar10-images"}
TREE_CLASSES = {
    "cifar10": ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"),
}


def load_images(name: str, train: bool) -> tuple[Tensor, Tensor]:
    """Images as float32 in [0, 1] with shape (N, C, H, W) (``IMAGE_SHAPES``), and int64 labels."""
    dataset_class = _dataset_class(name)
    root = cache_dir() / "torchvision"
    source = source_data_dir()
    if name in FOLDER_TREES:
        return _folder_tree(name, train) if source is not None else _download_rgb(name, root, train)
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


def _folder_tree(name: str, train: bool) -> tuple[Tensor, Tensor]:
    tree = source_data_dir() / FOLDER_TREES[name]
    if not tree.is_dir():
        raise DataNotFoundError(
            f"{tree} is missing: {DATA_DIR_ENV} must hold {FOLDER_TREES[name]}/{{train,test}}/<class>/*.jpg for "
            f"{name} offline; unset it to download instead."
        )
    part = folder_parts(tree)[0 if train else 1]
    if part is None or part.classes != TREE_CLASSES[name]:
        raise DataNotFoundError(f"{tree} must hold train/ and test/, each with the classes {TREE_CLASSES[name]}")
    decoded = read_part(part)
    return ByteImages(decoded.images, decoded.labels).tensors


def _download_rgb(name: str, root: Path, train: bool) -> tuple[Tensor, Tensor]:
    try:
        dataset = IMAGE_DATASETS[name](str(root), train=train, download=True)
    except Exception as error:  # network failures come in many types
        raise DataNotFoundError(
            f"could not download {name} into {root} ({error}). Without internet, point {DATA_DIR_ENV} at a "
            f"folder holding {FOLDER_TREES[name]}/{{train,test}}/<class>/*.jpg."
        ) from error
    images = torch.from_numpy(dataset.data).permute(0, 3, 1, 2).float().div_(255)
    return images, torch.tensor(dataset.targets, dtype=torch.int64)


def _dataset_class(name: str) -> type[datasets.MNIST]:
    try:
        return IMAGE_DATASETS[name]
    except KeyError:
        raise UserError(f"unknown image dataset {name!r}; known: {sorted(IMAGE_DATASETS)}") from None


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
