"""Nearest neighbours by L2 distance, in chunks so that queries × reference never fills memory
(the membership audit's distances, the privacy score's pairs)."""

from __future__ import annotations

import torch
from torch import Tensor


def nearest_neighbours(queries: Tensor, reference: Tensor, chunk: int = 1024) -> tuple[Tensor, Tensor]:
    """For each query (flattened), the L2 distance to its nearest reference row and that row's index."""
    flat_reference = reference.flatten(1).float()
    found = [torch.cdist(q.flatten(1).float(), flat_reference).min(1) for q in queries.split(chunk)]
    return torch.cat([f.values for f in found]), torch.cat([f.indices for f in found])
