"""Data: datamodules for named images, your own image folders and tables, with Poisson-sampled private
loaders; partitions; data settings.

The names are imported on first use, as ``zoo``'s own are, so that the torch-free checks of this package
(``zoo.data.folder_check``, ``zoo.data.folder_part``) answer a command line before torch is imported."""

from __future__ import annotations

from zoo.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(globals(), _NAMES)
