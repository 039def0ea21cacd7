"""Which records a use of data touches, so that uses of overlapping records compose whatever they are called.

A named dataset names the records a datamodule keeps ``<source>#<digest>``: ``source`` is the dataset and
split they are drawn from (``mnist/train``, ``lifesci/train`` for a table's training rows of any split) and
``digest`` a digest of the indices it keeps; the universe of records is public and fixed, so this
description publishes nothing about any one record. A user's own records are named ``local:<id>`` by this
machine's record index (``zoo.privacy.record_index``), which publishes nothing computed from them.

Whether two uses share a record is itself a fact about the records: a ledger that composed two uses only
when they overlap would state a smaller ε exactly when no record is in both, and so tell the DP adversary
whether the one record they do not know is. The ledger therefore composes every two uses unless a public
fact shows them apart (``disjoint_by_name``: named datasets of different sources). The local index answers
the checks made before any work, which publish nothing (``shared_records``: no record both protected and
declared public, no evaluation reference that holds a protected record).

An entry written before identities were recorded is matched by its dataset id's name before the split
(``mnist/train[seed=0,...]``).
"""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor

from zoo.privacy import record_index

DIGEST_CHARS = 16


def records_identity(source: str, kept: Tensor) -> str:
    """``source#digest`` for the records at indices ``kept`` of the named ``source`` (in any order)."""
    indices = kept.to(torch.int64).sort().values.contiguous().numpy()
    return f"{source}#{hashlib.sha256(indices.tobytes()).hexdigest()[:DIGEST_CHARS]}"


def _records_source(records: str | None, dataset_id: str) -> str | None:
    """Where a use's records come from: its identity's source, else (written before identities were
    recorded) its dataset id's name before the split, in the form only the named datamodules give
    (``mnist/train[...]``); None when neither says."""
    if records is not None:
        return records.rpartition("#")[0] or records
    name, split, _ = dataset_id.partition("[")
    return name if split and name.endswith("/train") else None


def named_source(records: str | None, dataset_id: str) -> str | None:
    """The named dataset a use draws on, when its identity is a public description: not a local use, and not a
    folder named by a digest of its files (as dpzoo named folders before the local index)."""
    source = _records_source(records, dataset_id)
    if source is None or source.startswith(record_index.LOCAL) or "@" in source:
        return None
    return source


def disjoint_by_name(first: tuple[str | None, str], second: tuple[str | None, str]) -> bool:
    """Whether a public fact shows two uses, each (records identity, dataset id), apart: both are named datasets
    of different sources. Nothing else does, whatever the records (module docstring)."""
    sources = named_source(*first), named_source(*second)
    return None not in sources and sources[0] != sources[1]


def shared_records(first: tuple[str | None, str], second: tuple[str | None, str]) -> bool | None:
    """Whether two uses, each (records identity, dataset id), share a record: True or False where one identity,
    the local index or the named sources tell, None where nothing does. For checks before any work only."""
    if first[0] is not None and first[0] == second[0]:
        return True
    shown = record_index.overlap(first[0], second[0])
    if shown is not None:
        return shown
    if disjoint_by_name(first, second):
        return False
    sources = named_source(*first), named_source(*second)
    return True if None not in sources else None
