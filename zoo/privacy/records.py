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

Only the sources ``named_sources`` lists, fixed by their declarations (``zoo.data.sources``), are named datasets: a
use is never taken for one because of how its id reads. A datamodule that declares no records identity is given one
from its records' content (``content_identity``), so that its uses link by content as a folder's do. An entry written
before identities were recorded is matched by its dataset id's name before the split (``mnist/train[seed=0,...]``),
and only when that name is in the list.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Sized
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset, IterableDataset, TensorDataset

from zoo.privacy import record_index

DIGEST_CHARS = 16

#: the module that declares the sources whose universe of records is public and fixed, imported on the first lookup
#: (as ``zoo.methods`` finds the methods): the privacy core names no dataset
SOURCES_MODULE = "zoo.data.sources"


def named_sources() -> frozenset[str]:
    """The sources whose universe of records is public and fixed (``zoo.data.sources.named_record_sources``: the named
    sets' splits and tables, the public networks' training data): the only uses a public fact can show apart. A test
    checks it against zoo.data and the public networks."""
    return importlib.import_module(SOURCES_MODULE).named_record_sources()


def records_identity(source: str, kept: Tensor) -> str:
    """``source#digest`` for the records at indices ``kept`` of the named ``source`` (in any order)."""
    indices = kept.to(torch.int64).sort().values.contiguous().numpy()
    return f"{source}#{hashlib.sha256(indices.tobytes()).hexdigest()[:DIGEST_CHARS]}"


def content_identity(dataset: Dataset) -> str | None:
    """``local:<id>`` of the records of a map-style ``dataset`` (items a tensor or a tuple of tensors), by their
    content: images (C, H, W) by their pixel keys, so that they link with the same images in a folder or a named
    dataset, anything else by a digest of its values (``zoo.privacy.record_index``). None for a dataset that
    cannot be enumerated (no length), which then links with every other use."""
    if isinstance(dataset, TensorDataset):
        return record_index.register(tensor_keys(dataset.tensors[0]))
    if isinstance(dataset, IterableDataset) or not isinstance(dataset, Sized):
        return None
    keys = [_item_key(dataset[index]) for index in range(len(dataset))]
    return record_index.register(np.stack(keys) if keys else np.zeros((0, record_index.KEY_BYTES), np.uint8))


def tensor_keys(inputs: Tensor) -> np.ndarray:
    """Record keys (N, 32) of ``inputs`` (N, ...): pixel keys of images (N, C, H, W) with values in [0, 1] or
    uint8, so that the same image links however it is held; a digest of each row's values otherwise."""
    if _is_image_batch(inputs):
        pixels = inputs if inputs.dtype == torch.uint8 else inputs.mul(255).round().to(torch.uint8)
        return record_index.pixel_keys(pixels.numpy())
    return record_index.row_keys(inputs.reshape(len(inputs), -1).double().numpy())


def _is_image_batch(inputs: Tensor) -> bool:
    if inputs.dim() != 4 or inputs.shape[1] not in (1, 3):
        return False
    if inputs.dtype == torch.uint8:
        return True
    return inputs.is_floating_point() and bool(((inputs >= 0) & (inputs <= 1)).all())


def _item_key(item: Any) -> np.ndarray:
    """One record's key: the first tensor of the item (its input; the label does not make another record)."""
    inputs = item[0] if isinstance(item, (tuple, list)) else item
    return tensor_keys(torch.as_tensor(inputs).detach().cpu().unsqueeze(0))[0]


def _records_source(records: str | None, dataset_id: str) -> str | None:
    """Where a use's records come from: its identity's source, else (written before identities were
    recorded) its dataset id's name before the split (``mnist/train[...]``); None when neither says."""
    if records is not None:
        return records.rpartition("#")[0] or records
    name, split, _ = dataset_id.partition("[")
    return name if split else None


def named_source(records: str | None, dataset_id: str) -> str | None:
    """The named dataset a use draws on: its source when ``named_sources`` lists it, else None (whatever the
    identity or the id says: a name is not a fact about the records)."""
    source = _records_source(records, dataset_id)
    return source if source in named_sources() else None


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
