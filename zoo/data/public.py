"""Data the user declares public, for pretraining without noise (``zoo.training.pretrain_public``).

Nothing is public by default: a datamodule becomes public only when wrapped here with the user's
statement of why (``source``), which the ledger and the card repeat. Public data carries no
guarantee and is charged no (ε, δ); whatever it is, the private data of a later stage keeps its own."""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl

from zoo.privacy import PrivacyConfigError
from zoo.privacy.private_data import DeclaredPrivateData


class PublicData(pl.LightningDataModule):
    """``data`` declared public by the user, who says why in ``source`` (e.g. "CIFAR-10 classes 0-4: a
    published dataset, not our patients' images").

    The ledger refuses public data that may share a record with protected data: where this machine's record index
    cannot tell (the protected data was used elsewhere, or the two are copies it cannot link),
    ``assume_disjoint=True`` is the user's statement that they share none, and the card states it."""

    def __init__(self, data: pl.LightningDataModule, source: str, *, assume_disjoint: bool = False) -> None:
        super().__init__()
        if not isinstance(data, pl.LightningDataModule):
            raise TypeError(f"PublicData wraps a LightningDataModule, got {type(data).__name__}")
        if isinstance(data, PublicData):
            raise TypeError("the data is already declared public")
        if not isinstance(source, str) or not source.strip():
            raise PrivacyConfigError(
                "say why the data is public: PublicData(data, source='...'); the ledger and the card state it, and "
                "nothing in it is protected"
            )
        if getattr(data, "dataset_id", None) is None:
            raise PrivacyConfigError(f"{type(data).__name__} has no dataset_id: the ledger must name the public data")
        self.data, self.source, self.assume_disjoint = data, source.strip(), bool(assume_disjoint)

    @property
    def dataset_id(self) -> str:
        return self.data.dataset_id

    @property
    def records_identity(self) -> str | None:
        """Which records are declared public (``zoo.privacy.records``): none of them may be protected ones."""
        return DeclaredPrivateData(self.data).records_identity

    @property
    def image_shape(self) -> Any:
        return getattr(self.data, "image_shape", None)

    @property
    def num_classes(self) -> Any:
        return getattr(self.data, "num_classes", None)

    def setup(self, stage: str) -> None:
        self.data.setup(stage)

    @property
    def train_set(self) -> Any:
        return self.data.train_set
