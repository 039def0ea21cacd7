"""Splits of a labelled dataset: per-class partitions and a held-out validation split."""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.errors import UserError


def class_partition(labels: Tensor) -> dict[int, Tensor]:
    """Indices of each class; the parts are disjoint and cover the data (parallel composition)."""
    return {int(c): torch.nonzero(labels == c).flatten() for c in torch.unique(labels)}


def train_validation_split(size: int, validation_size: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """A fixed, seeded split of ``range(size)`` into (train, validation) indices, for the named datasets: their
    records are a public, fixed universe. Never for a user's records: a permutation of positions moves hundreds
    of records to the other side when one is removed, so a user's folder or table decides each record by a hash
    of its own (``zoo.data.folders.hashed_below``)."""
    if not 0 <= validation_size < size:
        raise UserError(f"validation_size must be in [0, {size}), got {validation_size}")
    order = torch.randperm(size, generator=torch.Generator().manual_seed(seed))
    return order[validation_size:].sort().values, order[:validation_size].sort().values
