"""What a datamodule of private records declares about itself (``PrivateData``), how any datamodule is read as
one (``DeclaredPrivateData``), and the datamodules that serve each class on its own (``ClassPartitionedData``).

Any LightningDataModule can be trained privately (``DPCallback`` on a plain Trainer), so every member of
PrivateData is optional: a datamodule declares what it knows, and a member it lacks reads as None, which the
ledger takes as "not declared" (an unnamed dataset is warned about and named by its size; no records identity
links no entries by their records; no partition composes as the whole data) and a model as "not decided by the
data". zoo.data's datamodules declare what they know. The protocols live here, below zoo.data, because the
privacy core reads them and knows no dataset.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


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
        return getattr(self.datamodule, "records_identity", None)

    @property
    def partition_of(self) -> str | None:
        return getattr(self.datamodule, "partition_of", None)

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        return getattr(self.datamodule, "image_shape", None)

    @property
    def num_classes(self) -> int | None:
        return getattr(self.datamodule, "num_classes", None)


@runtime_checkable
class ClassPartitionedData(Protocol):
    """Private data that serves each class on its own: the classes are disjoint, so models trained on them, one
    each, compose in parallel (each part's ``partition_of`` names the whole)."""

    def for_class(self, label: int) -> PrivateData:
        """The records of class ``label`` only."""
