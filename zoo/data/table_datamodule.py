"""LightningDataModule for private tables (DP-NF): the paper's random 90/10 splits, Poisson
train loaders, and a standardisation released privately (or declared public)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from zoo.data.partition import train_validation_split
from zoo.data.standardisation import Standardisation, private_standardisation, public_standardisation
from zoo.data.tables import TABLES, load_table, read_table
from zoo.errors import UserError
from zoo.privacy import record_index
from zoo.privacy.parameters import check_positive, check_sample_rate
from zoo.privacy.records import records_identity
from zoo.privacy.sampling import poisson_loader

if TYPE_CHECKING:
    from zoo.privacy import DPBudget

STANDARDISATIONS = ("private", "public")
#: how a dataset id names the validation rows held out of the training rows
VALIDATION_TAG = ",minus-validation="


def split_and_validation(dataset_id: str) -> tuple[str, float]:
    """A table dataset id without its held-out validation rows, and their fraction (0 if none): two
    ids with the same first part hold out the same test rows (drawn first, from the split alone)."""
    match = re.search(rf"{VALIDATION_TAG}([^]]*)", dataset_id)
    if match is None:
        return dataset_id, 0.0
    return dataset_id.replace(match.group(0), ""), float(match.group(1))


class TableDataModule(pl.LightningDataModule):
    """A named table (``lifesci``, ``gaussians``, ``half_moons``, ``pinwheel``) or a CSV/NumPy file.

    Split ``split`` of ``splits`` of a named table is a seeded random permutation whose first
    ``test_fraction`` rows are the test set (the DP-NF paper's 10 random 90/10 splits); a
    ``validation_fraction`` of the rest may be held out for model selection. A file's rows are the user's:
    each row's side is decided by a hash of the split and its own values (``_hashed_sides``), so that adding
    or removing one row moves no other, and the ledger names them by this machine's record index
    (``zoo.privacy.record_index``), never by the file's path or a digest of its rows. The remaining
    training rows are the private data, served by Poisson sampling at ``sample_rate``.

    ``standardisation="private"`` releases mean and std with the Gaussian mechanism on
    rows clipped to L2 norm ``clip_bound`` (a public bound on the rows' norms) at
    ``standardisation_noise_multiplier``; the model adds the entry to its ledger and
    the budget calibrates DP-SGD's σ so that both together meet the target ε.
    ``"public"`` uses the exact statistics, outside the guarantee (the card says so).
    """

    def __init__(
        self,
        table: str = "lifesci",
        sample_rate: float = 0.01,
        split: int = 0,
        splits: int = 10,
        test_fraction: float = 0.1,
        validation_fraction: float = 0.0,
        standardisation: str = "private",
        clip_bound: float | None = None,
        standardisation_noise_multiplier: float = 10.0,
        sampling_seed: int | None = None,
        eval_batch_size: int = 10_000,
    ) -> None:
        super().__init__()
        if table not in TABLES and not Path(table).suffix:
            raise UserError(f"unknown table {table!r}; known: {list(TABLES)}, or a .csv/.npy file path")
        if isinstance(split, bool) or not isinstance(split, int) or not 0 <= split < splits:
            raise UserError(f"split must be an integer in 0..{splits - 1}, got {split!r}")
        if not 0 < test_fraction < 1 or not 0 <= validation_fraction < 1:
            raise UserError(f"fractions must lie in (0, 1): test {test_fraction}, validation {validation_fraction}")
        if standardisation not in STANDARDISATIONS:
            raise UserError(f"standardisation must be one of {STANDARDISATIONS}, got {standardisation!r}")
        if standardisation == "private" and clip_bound is None:
            raise UserError(
                "private standardisation needs clip_bound, a public bound B on the rows' L2 norms "
                "(rows are clipped to it); or pass standardisation='public' to treat the statistics as public"
            )
        self.table = table
        self.sample_rate = check_sample_rate(sample_rate)
        self.split = split
        self.splits = splits
        self.test_fraction = test_fraction
        self.validation_fraction = validation_fraction
        self.standardisation_kind = standardisation
        self.clip_bound = clip_bound
        self.standardisation_noise_multiplier = check_positive(
            standardisation_noise_multiplier, "standardisation_noise_multiplier"
        )
        self.sampling_seed = sampling_seed
        self.eval_batch_size = eval_batch_size
        self.train_rows: Tensor | None = None
        self.validation_rows: Tensor | None = None
        self.test_rows: Tensor | None = None
        self._kept: Tensor | None = None
        self._row_keys: np.ndarray | None = None

    @property
    def dataset_id(self) -> str:
        held_out = f"{VALIDATION_TAG}{self.validation_fraction:g}" if self.validation_fraction else ""
        return f"{self._source()}[split={self.split}/{self.splits},test={self.test_fraction:g}{held_out}]"

    @property
    def records_identity(self) -> str:
        """Which rows of the table this module serves (``zoo.privacy.records``): every split's training rows
        of a named table are drawn from the one table, so they share one source (their keys kept under it in the
        local index, so that a file copying them is found to share them); a file's by the local index."""
        self.setup()
        kept = self._row_keys[self._kept.numpy()]
        if not self._named:
            return record_index.register(kept)
        identity = records_identity(self._source(), self._kept)
        record_index.register_named(identity, kept)
        return identity

    @property
    def _named(self) -> bool:
        return self.table in TABLES

    def _source(self) -> str:
        if self._named:
            return f"{self.table}/train"
        self.setup()
        return f"{record_index.register(self._row_keys)}/train"

    @property
    def features(self) -> int:
        self.setup()
        return self.train_rows.shape[1]

    def setup(self, stage: str | None = None) -> None:
        if self.train_rows is not None:
            return
        table = load_table(self.table) if self._named else read_table(self.table)
        self._row_keys = record_index.row_keys(table.numpy())
        test, validation, self._kept = self._permuted_sides(len(table)) if self._named else self._hashed_sides(table)
        self.test_rows = table[test].float()
        self.validation_rows = table[validation].float()
        self.train_rows = table[self._kept].float()

    def _permuted_sides(self, rows: int) -> tuple[Tensor, Tensor, Tensor]:
        """(test, validation, train) indices of a named table: the DP-NF paper's seeded permutations of a
        public, fixed universe of rows."""
        rest, test = train_validation_split(rows, round(self.test_fraction * rows), seed=self.split)
        validation_size = round(self.validation_fraction * len(rest))
        order = torch.randperm(len(rest), generator=torch.Generator().manual_seed(self.splits + self.split))
        return test, rest[order[:validation_size]], rest[order[validation_size:]]

    def _hashed_sides(self, table: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(test, validation, train) indices of a user's rows: each by a hash of the split and its own values."""
        test = _shares(table, f"test\0{self.split}") < self.test_fraction
        validation = ~test & (_shares(table, f"validation\0{self.split}") < self.validation_fraction)
        train = ~test & ~validation
        if not train.any():
            raise UserError(f"test_fraction and validation_fraction leave no training rows of {len(table)}")
        return test.nonzero().flatten(), validation.nonzero().flatten(), train.nonzero().flatten()

    def standardisation(self, budget: DPBudget) -> Standardisation:
        """The standardisation of the private rows: released through ``budget`` ("private") or exact ("public")."""
        self.setup()
        if self.standardisation_kind == "public":
            return public_standardisation(self.train_rows)
        return private_standardisation(
            self.train_rows,
            self.clip_bound,
            self.standardisation_noise_multiplier,
            budget,
        )

    def train_dataloader(self) -> DataLoader:
        micro_batches = self.trainer.accumulate_grad_batches if self.trainer is not None else 1
        dataset = TensorDataset(self.train_rows)
        return poisson_loader(dataset, self.sample_rate, micro_batches=micro_batches, seed=self.sampling_seed)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(self.validation_rows), batch_size=self.eval_batch_size)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(self.test_rows), batch_size=self.eval_batch_size)


def _shares(table: Tensor, salt: str) -> Tensor:
    """A uniform number in [0, 1) for each row, from ``salt`` and the row's own values."""
    rows = table.to(torch.float64).numpy()
    digests = [hashlib.sha256(salt.encode() + row.tobytes()).digest()[:8] for row in rows]
    return torch.tensor([int.from_bytes(d, "big") / 2**64 for d in digests], dtype=torch.float64)
