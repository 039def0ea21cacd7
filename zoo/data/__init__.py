"""Data: datamodules for named images, your own image folders and tables, with Poisson-sampled private
loaders; partitions; data settings."""

from zoo.data.byte_images import ByteImages
from zoo.data.datamodule import ImageDataModule
from zoo.data.folders import ImageFolderError
from zoo.data.image_folder import ImageFolderDataModule
from zoo.data.images import load_images
from zoo.data.partition import class_partition, train_validation_split
from zoo.data.public import PublicData
from zoo.data.settings import DataNotFoundError
from zoo.data.table_datamodule import TableDataModule
from zoo.data.tensors import TensorDataModule

__all__ = [
    "ByteImages",
    "DataNotFoundError",
    "ImageDataModule",
    "ImageFolderDataModule",
    "ImageFolderError",
    "PublicData",
    "TableDataModule",
    "TensorDataModule",
    "class_partition",
    "load_images",
    "train_validation_split",
]
