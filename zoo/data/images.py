"""The named image sets (``zoo.data.sources``) as in-memory tensors: torchvision's loaders online; offline,
``DPZOO_DATA_DIR`` in torchvision's layout or, for a set that names a ``tree``, as an image-folder tree
(``<tree>/{train,test}/<class>/*.jpg``, read by ``zoo.data.folders``)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torchvision import datasets

from zoo.data.byte_images import ByteImages
from zoo.data.folders import folder_parts, read_part
from zoo.data.settings import DATA_DIR_ENV, DataNotFoundError, cache_dir, source_data_dir
from zoo.data.sources import NamedImages, named_or_refused


def load_images(name: str, train: bool) -> tuple[Tensor, Tensor]:
    """The named set's images (``zoo.data.sources``) as float32 in [0, 1] with shape (N, C, H, W), and int64 labels."""
    return named_or_refused(name).load(train)


def load_named(source: NamedImages, train: bool) -> tuple[Tensor, Tensor]:
    """A named set's loader: torchvision's ``settings["torchvision"]`` class online; offline, its ``raw/`` files or,
    where the source names a ``tree``, an image-folder tree under ``DPZOO_DATA_DIR``."""
    dataset_class = getattr(datasets, source.settings["torchvision"])
    root = cache_dir() / "torchvision"
    data_dir = source_data_dir()
    tree = source.settings.get("tree")
    if tree is not None:
        return _folder_tree(source, tree, train) if data_dir is not None else _download_rgb(source, root, train)
    if data_dir is not None:
        _decompress_into(data_dir, root, dataset_class)
        dataset = dataset_class(str(root), train=train, download=False)
    else:
        dataset = _download(source, dataset_class, root, train)
    images = dataset.data.unsqueeze(1).float().div_(255.0)
    return images, dataset.targets.long()


def _download(source: NamedImages, dataset_class: type[datasets.MNIST], root: Path, train: bool) -> Any:
    try:
        return dataset_class(str(root), train=train, download=True)
    except Exception as error:  # network failures come in many types
        raise DataNotFoundError(
            f"could not download {source.name} into {root} ({error}). Without internet, point {DATA_DIR_ENV} at "
            f"{source.offline_help}."
        ) from error


def _folder_tree(source: NamedImages, tree_name: str, train: bool) -> tuple[Tensor, Tensor]:
    tree = source_data_dir() / tree_name
    if not tree.is_dir():
        raise DataNotFoundError(
            f"{tree} is missing: {DATA_DIR_ENV} must be {source.offline_help} for {source.name} offline; unset it to "
            "download instead."
        )
    part = folder_parts(tree)[0 if train else 1]
    if part is None or part.classes != source.classes:
        raise DataNotFoundError(f"{tree} must hold train/ and test/, each with the classes {source.classes}")
    decoded = read_part(part)
    return ByteImages(decoded.images, decoded.labels).tensors


def _download_rgb(source: NamedImages, root: Path, train: bool) -> tuple[Tensor, Tensor]:
    dataset = _download(source, getattr(datasets, source.settings["torchvision"]), root, train)
    images = torch.from_numpy(dataset.data).permute(0, 3, 1, 2).float().div_(255)
    return images, torch.tensor(dataset.targets, dtype=torch.int64)


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
