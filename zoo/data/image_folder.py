"""Your own images as private data: a folder of class sub-folders, a CSV or Parquet table of image paths, or a saved
``datasets`` dataset (``zoo.data.sources``), any size, grey or RGB."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader

from zoo.data.byte_images import ByteImages
from zoo.data.conversion import check_convert, preprocessing_rule
from zoo.data.folder_check import duplicates_lines
from zoo.data.folder_part import names_root
from zoo.data.folders import (
    SPLIT_RULE,
    DecodedImages,
    FolderSplit,
    check_image_size,
    read_part,
    split_by_pixels,
    warn_ignored,
)
from zoo.data.sources import local_parts
from zoo.errors import DPZooWarning, UserError
from zoo.privacy import record_index
from zoo.privacy.parameters import check_sample_rate
from zoo.privacy.sampling import poisson_loader

#: what a record is, as a model's card states it: a fixed rule, never how many files it merged (a fact about the
#: protected records)
RECORD_RULE = (
    "one distinct image: files with the same pixels, in one class or several, are one record, trained once "
    "(under the first class that holds it)"
)


class ImageFolderDataModule(pl.LightningDataModule):
    """Images in ``root/<class>/*.{png,jpg,jpeg,bmp,webp}`` (classes are the sorted folder names; a class folder's
    sub-folders are part of it, hidden ones and ``__MACOSX`` excepted), or in ``root/train/<class>/...`` and
    ``root/test/<class>/...``; the test part is for evaluation only. ``root`` may also be any local source
    ``zoo.data.sources`` recognises: a CSV or Parquet table of image paths and labels, or a ``datasets`` dataset saved
    to disk (its ``test`` split held out), read from ``image_column`` and ``label_column`` where the defaults do not
    fit; its rows become files as a folder's are, and everything below holds unchanged.

    A record is an image, not a file: files with the same pixels (a ``photo (1).jpg`` copy, or one photo filed in two
    classes) are one record, trained once as the first of them in class and file order, and named in a warning
    (``duplicates``): trained twice, the photo's owner would be protected at about twice the stated ε. The training
    images minus a ``validation_size`` fraction held out for tuning (not protected) are the private data, served by
    Poisson sampling at ``sample_rate``. A folder without ``test/`` keeps a ``test_fraction`` as its test part:
    never trained on, never in the ledger's records, and recorded with a model (``card_data``) so that evaluation
    finds it again. Each image's side of both splits is decided by a hash of ``split_seed`` and its record key
    (``zoo.data.folders.split_by_pixels``), so that all its copies fall on one side and adding or removing one
    image changes that image's side and no other's: the neighbouring datasets of the guarantee differ by that one
    record. ``image_size`` (an int or (H, W)) resizes every image, ``channels`` (1 or 3) converts them; by default
    both come from the images, which must then agree. ``convert`` ("crop", "pad" or "stretch":
    ``zoo.data.conversion``) allows what would otherwise be refused: images of another aspect ratio, transparency.
    ``classes`` fixes the label set and its order (else the sorted class folders), so that the class names a card
    shows depend on no image. Every problem of the folder is reported at once, before any work
    (``zoo.data.folder_check``). Images are decoded once into uint8 and, with ``cache``, a copy is kept under
    ``DPZOO_CACHE_DIR`` (owner-only: it holds the private images) for the next run.

    The ledger names the data by this machine's record index (``zoo.privacy.record_index``): the same images
    get the same ``local:`` name wherever they lie, and nothing published is computed from them.
    """

    def __init__(
        self,
        root: str,
        sample_rate: float = 0.1,
        image_size: int | Sequence[int] | None = None,
        channels: int | None = None,
        label: int | None = None,
        validation_size: float = 0.1,
        split_seed: int = 0,
        sampling_seed: int | None = None,
        eval_batch_size: int = 1000,
        cache: bool = True,
        convert: str | None = None,
        test_fraction: float = 0.0,
        classes: Sequence[str] | None = None,
        image_column: str | None = None,
        label_column: str | None = None,
    ) -> None:
        super().__init__()
        if channels not in (None, 1, 3):
            raise UserError(f"channels must be 1 (grey), 3 (RGB) or None (from the images), got {channels!r}")
        self.root = Path(root).expanduser()
        self.sample_rate = check_sample_rate(sample_rate)
        self.image_size = check_image_size(image_size)
        self.channels = channels
        self.validation_size = _validation_fraction(validation_size)
        self.split_seed = split_seed
        self.sampling_seed = sampling_seed
        self.eval_batch_size = eval_batch_size
        self.cache = cache
        self.convert = check_convert(convert)
        self.columns = {"image": image_column, "label": label_column}
        kind, self.train_part, self.test_part = local_parts(self.root, classes, image_column, label_column)
        self.source = kind.name
        if isinstance(test_fraction, bool) or not 0 <= test_fraction < 1:
            raise UserError(f"test_fraction must be a fraction in [0, 1), got {test_fraction!r}")
        if test_fraction and self.test_part is not None:
            raise UserError(f"{self.root} has a test/ folder already: test_fraction is for folders without one")
        self.test_fraction = test_fraction
        warn_ignored(self.train_part, self.test_part)
        if label is not None and label not in range(len(self.classes)):
            raise UserError(f"label must be a class in 0..{len(self.classes) - 1} ({self.root}) or None, got {label!r}")
        self.label = label
        self._decoded: tuple[DecodedImages, DecodedImages | None] | None = None
        self._split: FolderSplit | None = None
        self.train_set: ByteImages | None = None
        self.validation_set: ByteImages | None = None
        self.test_set: ByteImages | None = None
        self._kept: Tensor | None = None

    # ------------------------------------------------------------ what the data is
    @property
    def classes(self) -> tuple[str, ...]:
        return self.train_part.classes

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(C, H, W) of the images as served (decodes them on first use)."""
        return tuple(self._decode()[0].images.shape[1:])

    @property
    def records_id(self) -> str:
        """The folder's training images by this machine's record index: the same images get the same name
        wherever they lie, and the name publishes nothing computed from them."""
        return record_index.register(self._decode()[0].record_keys.numpy())

    @property
    def records_identity(self) -> str:
        """Which of the folder's training images this module serves, named by the local record index."""
        self.setup()
        return record_index.register(self._decode()[0].record_keys[self._kept].numpy())

    @property
    def dataset_id(self) -> str:
        whole = self._whole_id()
        return whole if self.label is None else f"{whole}/class={self.label}"

    @property
    def partition_of(self) -> str | None:
        """The whole private dataset when this module serves one class of it."""
        return None if self.label is None else self._whole_id()

    def _whole_id(self) -> str:
        held_out = f"test={self.test_fraction:g}," if self.test_fraction else ""
        rule = SPLIT_RULE.replace(" ", "-")
        return f"{self.records_id}/train[{held_out}validation={self.validation_size:g},seed={self.split_seed},{rule}]"

    def folder_split(self) -> FolderSplit:
        """Which of the training part's files train, validate and are held out (``test_fraction``), each distinct
        image once (decodes the images on first use: the sides follow their pixels); copies are warned of."""
        if self._split is None:
            keys = self._decode()[0].record_keys.numpy()
            split = split_by_pixels(keys, self.test_fraction, self.validation_size, self.split_seed)
            if not split.train:
                raise UserError(
                    f"validation_size {self.validation_size:g} and test_fraction {self.test_fraction:g} leave no "
                    f"training images of {len(self.train_part.files)} in {self.root}"
                )
            self._split = split
            if split.duplicates:
                head, *groups = self.duplicates
                warnings.warn("\n  ".join([f"{self.root}: {head}", *groups]), DPZooWarning, stacklevel=3)
        return self._split

    @property
    def duplicates(self) -> list[str]:
        """The training part's files that hold one image: a sentence saying what is trained of them, then the
        groups (``a.png = b.png``, one a line or packed); empty when every file holds another image."""
        groups = self.folder_split().duplicates
        return duplicates_lines(self.train_part, groups, names_root(self.root, self.train_part)) if groups else []

    def file_sides(self) -> dict[str, str]:
        """Each training-part file's side of the splits ("train", "validation" or "test"), by its path within
        the part: to see the split, which no other image's presence moves. Copies of an image share its side;
        ``duplicates`` says which of them trains."""
        part = self.train_part
        return {str(part.files[i].relative_to(part.root)): side for i, side in self.folder_split().sides().items()}

    def for_class(self, label: int) -> ImageFolderDataModule:
        """The same data restricted to one class (a disjoint partition: each distinct image is in one class),
        sharing the scanned folder, the decoded images and the split."""
        if label not in range(self.num_classes):
            raise UserError(f"label must be a class in 0..{self.num_classes - 1} ({self.root}), got {label!r}")
        self.folder_split()
        part = copy.copy(self)
        part.label = label
        part.train_set = part.validation_set = part.test_set = part._kept = None
        return part

    # ------------------------------------------------------------ Lightning hooks
    def prepare_data(self) -> None:
        self._decode()

    def setup(self, stage: str | None = None) -> None:
        if self.train_set is not None:
            return
        train, test = self._decode()
        split = self.folder_split()
        held_out, train_idx, validation_idx = (
            torch.tensor(indices, dtype=torch.int64) for indices in (split.held_out, split.train, split.validation)
        )
        self._kept = train_idx if self.label is None else train_idx[train.labels[train_idx] == self.label]
        self.train_set = self._subset(train, train_idx)
        self.validation_set = self._subset(train, validation_idx)
        if test is not None:
            self.test_set = self._subset(test, slice(None))
        elif self.test_fraction:
            self.test_set = self._subset(train, held_out)

    def _decode(self) -> tuple[DecodedImages, DecodedImages | None]:
        if self._decoded is None:
            along = [self.test_part] if self.test_part is not None else []
            options = dict(cache=self.cache, convert=self.convert)
            train = read_part(self.train_part, self.image_size, self.channels, along=along, **options)
            # the test part is read as the training part is served, so that both have one shape
            size, channels = tuple(train.images.shape[2:]), train.images.shape[1]
            test = None if self.test_part is None else read_part(self.test_part, size, channels, **options)
            self._decoded = (train, test)
        return self._decoded

    # ------------------------------------------------------------ what a model records
    def card_data(self) -> dict[str, Any]:
        """The data as a model's config and card record it: the folder's name (never its path), the records'
        identity, the classes as the folder spells them, the training images, what a record is (``RECORD_RULE``:
        the rule, not how many files it merged), the rule they were read by (not what it did to how many:
        ``zoo.data.conversion.preprocessing_rule``), and the held-out part with what evaluation needs to find it
        again (``zoo.metrics.reference``)."""
        self.setup()
        return {
            "name": self.root.resolve().name,
            "source": self.source,
            **({"columns": self.columns} if any(self.columns.values()) else {}),
            "records": self.records_identity,
            "classes": list(self.classes),
            "images": len(self.train_set),
            "record": RECORD_RULE,
            "image_shape": list(self.image_shape),
            "preprocessing": preprocessing_rule(self.image_shape[1:], self.image_shape[0], self.convert),
            "held_out": self.held_out_record(),
        }

    def held_out_record(self) -> dict[str, Any] | None:
        """The test part: its size and how to rebuild it (a folder's test/, or the fraction, seed and rule of a flat
        folder's split: ``SPLIT_RULE``, which evaluation reads to rebuild it, and whose absence means the rule before
        it); None when the folder keeps none. No digest: the held-out images are the user's too."""
        if self.test_part is not None:
            images, rule = len(self.test_part.files), {"part": "test/"}
        elif self.test_fraction:
            rule = {"fraction": self.test_fraction, "seed": self.split_seed, "split": SPLIT_RULE}
            images = len(self.folder_split().held_out)
        else:
            return None
        return {"images": images, **rule, "convert": self.convert}

    def _subset(self, decoded: DecodedImages, index) -> ByteImages:
        images, labels = decoded.images[index], decoded.labels[index]
        if self.label is not None:
            keep = labels == self.label
            images, labels = images[keep], labels[keep]
        return ByteImages(images, labels)

    def train_dataloader(self) -> DataLoader:
        self.setup()
        micro_batches = self.trainer.accumulate_grad_batches if self.trainer is not None else 1
        return poisson_loader(self.train_set, self.sample_rate, micro_batches=micro_batches, seed=self.sampling_seed)

    def val_dataloader(self) -> DataLoader:
        self.setup()
        return DataLoader(self.validation_set, batch_size=self.eval_batch_size)

    def test_dataloader(self) -> DataLoader:
        self.setup()
        if self.test_set is None:
            raise UserError(f"{self.root} has no test/ folder: its images are all training data")
        return DataLoader(self.test_set, batch_size=self.eval_batch_size)


def _validation_fraction(value: Any) -> float:
    """A folder's validation share: a fraction, never a count (a count would move other images' sides)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise UserError(
            f"validation_size of an image folder is a fraction in [0, 1), got {value!r}: each image's side is "
            "decided by a hash of its own pixels, so that adding or removing one image moves no other (a count would "
            "move others)"
        )
    return float(value)
