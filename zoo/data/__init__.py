"""Data: image and table datamodules with Poisson-sampled private loaders, partitions, data settings."""

from zoo.data.datamodule import ImageDataModule
from zoo.data.images import DataNotFoundError, load_images
from zoo.data.partition import class_partition, train_validation_split
from zoo.data.table_datamodule import TableDataModule
from zoo.data.tensors import TensorDataModule

__all__ = [
    "DataNotFoundError",
    "ImageDataModule",
    "TableDataModule",
    "TensorDataModule",
    "class_partition",
    "load_images",
    "train_validation_split",
]
