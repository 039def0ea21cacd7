"""What a datamodule of private records declares about itself (``PrivateData``), how any datamodule is read as
one (``DeclaredPrivateData``), and the datamodules that serve each class on its own (``ClassPartitionedData``).

Any LightningDataModule can be trained privately (``DPCallback`` on a plain Trainer), so every member of
PrivateData is optional: a datamodule declares what it knows, and a member it lacks reads as None, which the
ledger takes as "not declared" (an unnamed dataset is warned about and named by its size; no partition composes
as the whole data) and a model as "not decided by the data". A records identity it lacks is taken from its
training records' content (``zoo.privacy.records.content_identity``), so that two uses of the same records link
whatever they are called. zoo.data's datamodules declare what they know. The protocols live here, below zoo.data,
because the privacy core reads them and knows no dataset.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol, runtime_checkable

from zoo.privacy.records import content_identity
from zoo.privacy.sampling import PoissonBatches

#: content identities already computed, by training dataset (a datamodule is read before and during training)
_CONTENT_IDENTITIES: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()


class PrivateData(Protocol):
    """What a private datamodule may declare: its name and records for the ledger, its shape for the model."""

    @property
    def dataset_id(self) -> str | None:
        """The words that name the data in the ledger and on the card."""

    @property
    def records_identity(self) -> str | None:
        """A local, never published identity of the records served (``zoo.privacy.records``): entries over
        records that overlap compose, whatever the data is named."""

    @property
    def partition_of(self) -> str | None:
        """The whole data's ``dataset_id`` when this is one part of a partition of it (one class of it): the
        parts' entries compose in parallel."""

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        """(C, H, W) of the images; a model takes it as its constructor argument of that name."""

    @property
    def num_classes(self) -> int | None:
        """The number of classes; a model takes it as its constructor argument of that name."""


class DeclaredPrivateData(PrivateData):
    """``datamodule`` (any object, None included) read as PrivateData: each member it declares, read when asked
    (some are computed from its records), and None for each it lacks."""

    def __init__(self, datamodule: object) -> None:
        self.datamodule = datamodule

    @property
    def dataset_id(self) -> str | None:
        return getattr(self.datamodule, "dataset_id", None)

    @property
    def records_identity(self) -> str | None:
        declared = getattr(self.datamodule, "records_identity", None)
        if declared is not None:
            return declared
        dataset = _training_dataset(self.datamodule)
        if dataset is None:
            return None
        if dataset not in _CONTENT_IDENTITIES:
            _CONTENT_IDENTITIES[dataset] = content_identity(dataset)
        return _CONTENT_IDENTITIES[dataset]

    @property
    def partition_of(self) -> str | None:
        return getattr(self.datamodule, "partition_of", None)

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        return getattr(self.datamodule, "image_shape", None)

    @property
    def num_classes(self) -> int | None:
        return getattr(self.datamodule, "num_classes", None)


def _training_dataset(datamodule: object) -> Any:
    """The dataset a datamodule trains on: its ``train_set``, else its train loader's dataset (inside a Poisson
    loader's batches); None when it has neither (or its loader cannot be built yet)."""
    dataset = getattr(datamodule, "train_set", None)
    if dataset is not None:
        return dataset
    loader = getattr(datamodule, "train_dataloader", None)
    try:
        dataset = getattr(loader(), "dataset", None) if callable(loader) else None
    except Exception:  # a loader that needs a trainer or setup first: no content to read here
        return None
    return dataset.dataset if isinstance(dataset, PoissonBatches) else dataset


@runtime_checkable
class ClassPartitionedData(Protocol):
    """Private data that serves each class on its own: the classes are disjoint, so models trained on them, one
    each, compose in parallel (each part's ``partition_of`` names the whole)."""

    def for_class(self, label: int) -> PrivateData:
        """The records of class ``label`` only."""
