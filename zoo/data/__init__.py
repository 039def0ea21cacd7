"""Data: datamodules for named images, your own image folders and tables, with Poisson-sampled private
loaders; partitions; data settings.

The names are imported on first use, as ``zoo``'s own are, so that the torch-free checks of this package
(``zoo.data.folder_check``, ``zoo.data.folder_part``) answer a command line before torch is imported."""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "ByteImages": "zoo.data.byte_images",
    "DataNotFoundError": "zoo.data.settings",
    "ImageDataModule": "zoo.data.datamodule",
    "ImageFolderDataModule": "zoo.data.image_folder",
    "ImageFolderError": "zoo.data.folders",
    "PublicData": "zoo.data.public",
    "TableDataModule": "zoo.data.table_datamodule",
    "TensorDataModule": "zoo.data.tensors",
    "class_partition": "zoo.data.partition",
    "load_images": "zoo.data.images",
    "train_validation_split": "zoo.data.partition",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'zoo.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(_NAMES[name]), name)
    globals()[name] = value
    return value
