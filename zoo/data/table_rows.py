"""``TableRows``: a datamodule of a table's private rows (``TableDataModule``), the data a model of table rows
(DP-NF) releases statistics of before its private steps: their standardisation, and from the rows themselves,
optionally, its ActNorm starts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from torch import Tensor

if TYPE_CHECKING:
    from zoo.data.standardisation import Standardisation
    from zoo.privacy import DPBudget


@runtime_checkable
class TableRows(Protocol):
    #: the private training rows (None until the datamodule is set up)
    train_rows: Tensor | None

    @property
    def features(self) -> int:
        """The number of columns."""

    def standardisation(self, budget: DPBudget) -> Standardisation:
        """The rows' per-feature mean and std, released through ``budget`` (or exact, when declared public)."""
