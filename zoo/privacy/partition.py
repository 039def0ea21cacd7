"""Assigning private records to disjoint parts by a draw that depends on each record alone.

Sample-and-aggregate (DP-AD's voters) and private helpers (GS-WGAN's critics, DP²-VAE's
encoders) rest on one fact: adding or removing one record changes exactly one part and
leaves every other part as it was. A partition by position (``randperm(len(rows))`` cut into
chunks) breaks it: removing one row shifts every later row into another part. Here each
record's part is a keyed BLAKE2b hash of the record's own bytes, so it does not depend on
the other records, their number or their order; the key (OS entropy unless given) keeps the
assignment unpredictable, which the privacy argument does not need but users expect.
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np
import torch
from torch import Tensor

from zoo.privacy.errors import PrivacyConfigError

KEY_BYTES = 16


def new_partition_key() -> bytes:
    """A fresh secret key from OS entropy."""
    return secrets.token_bytes(KEY_BYTES)


def assign_parts(records: Tensor, parts: int, key: bytes | None = None) -> Tensor:
    """Part index in ``0..parts-1`` of each record (one per row of ``records``), int64.

    Two identical records land in the same part; any other record's part is unchanged by
    adding or removing a record. Without ``key`` a fresh secret key is drawn.
    """
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise PrivacyConfigError(f"parts must be a positive integer, got {parts!r}")
    if records.dim() < 1:
        raise PrivacyConfigError("records need a leading dimension, one row per record")
    key = new_partition_key() if key is None else key
    rows = np.ascontiguousarray(records.detach().cpu().reshape(len(records), -1).numpy())
    digests = [hashlib.blake2b(row.tobytes(), digest_size=8, key=key).digest() for row in rows]
    values = np.array([int.from_bytes(d, "little") % parts for d in digests], dtype=np.int64)
    return torch.from_numpy(values)
