"""Which records a use of data touches, so that uses of overlapping records compose whatever they are called.

A private datamodule names its records ``<source>#<digest>``: ``source`` is the named dataset and split
they are drawn from (``mnist/train``, ``<folder>@sha256:<content>/train``, ``lifesci/train`` for a table's
training rows of any split) and ``digest`` a digest of the indices of the records it keeps from the source.
Another validation size or split seed keeps other indices of the same source, most of them shared: two
uses of one source may overlap, and the ledger composes them. A budget that names its data may not give
records the ledger holds another name.

The source is the dataset id's name before its split (``mnist/train[seed=0,...]``), so that ledger entries
written before identities were recorded (shipped checkpoints) are matched by their dataset id.
"""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor

DIGEST_CHARS = 16


def records_identity(source: str, kept: Tensor) -> str:
    """``source#digest`` for the records at indices ``kept`` of ``source`` (in any order)."""
    indices = kept.to(torch.int64).sort().values.contiguous().numpy()
    return f"{source}#{hashlib.sha256(indices.tobytes()).hexdigest()[:DIGEST_CHARS]}"


def records_source(records: str | None, dataset_id: str) -> str | None:
    """Where a use's records come from: its identity's source, else (written before identities were
    recorded) its dataset id's name before the split; None when neither says."""
    if records is not None:
        return records.rpartition("#")[0]
    name, split, _ = dataset_id.partition("[")
    return name if split else None
