"""The local record index: which records each use of data touched, kept on this machine only, for the checks
made before any work (no record both protected and declared public, no evaluation reference holding a protected
record), while nothing published is computed from the records. No ε depends on it (``zoo.privacy.records``).

- A record's key is the sha256 of its pixels at their own size, as RGB (``pixel_key``): a copy of a file, a
  symlink to it, a renamed class folder and the same image as the named dataset's tensor all give one key.
  A re-encoded JPEG of the same photo gives another: the index links exact copies, not near-duplicates.
  A table row's key is the sha256 of its values (``row_keys``).
- A use of a user's own records is named ``local:<id>`` (``register``), ``id`` an HMAC-SHA256 of its sorted
  keys under a secret key drawn at first use and kept, owner-only, in this machine's dpzoo folder. The same
  records get the same name here; to anyone without the key a name is a random string, so the DP adversary,
  who knows every record but one, cannot test a candidate record against a published name (a plain digest
  of the files would tell them with certainty).
- Each use's keys are kept beside it, so that those checks can test whether two uses share a record
  (``overlap``, ``shared_keys``). The named datasets keep their public identities (``mnist/train#<indices>``)
  and register their keys under them (``register_named``), so that a folder of copied MNIST images is found to
  share them here.

Deleting the folder forgets the index: the checks then refuse what they can no longer show (an evaluation
reference of a model whose records it held), and no ε changes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

import numpy as np

from zoo.local_state import cache_dir

#: the prefix of a records identity that only this machine's index resolves
LOCAL = "local:"
KEY_BYTES = 32
ID_CHARS = 16


def index_dir() -> Path:
    """The owner-only folder that holds the secret key and each use's record keys."""
    path = cache_dir() / "records"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def pixel_key(pixels: np.ndarray) -> bytes:
    """The key of one image given as uint8 (H, W) or (H, W, C) with C 1 or 3: sha256 of its size and RGB bytes,
    so that a grey image and its RGB copy, or a file and its decoded tensor, get one key."""
    if pixels.dtype != np.uint8:
        raise ValueError(f"pixel_key takes uint8 pixels, got {pixels.dtype}")
    rgb = pixels if pixels.ndim == 3 else pixels[:, :, None]
    if rgb.shape[2] == 1:
        rgb = np.repeat(rgb, 3, axis=2)
    height, width, _ = rgb.shape
    return hashlib.sha256(f"{height}x{width}\0".encode() + np.ascontiguousarray(rgb).tobytes()).digest()


def pixel_keys(images: np.ndarray) -> np.ndarray:
    """Keys (N, 32) uint8 of uint8 images (N, C, H, W) (``pixel_key`` of each)."""
    return _key_array([pixel_key(image.transpose(1, 2, 0)) for image in images])


def row_keys(rows: np.ndarray) -> np.ndarray:
    """Keys (N, 32) uint8 of a table's rows: the sha256 of each row's float64 values."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    return _key_array([hashlib.sha256(row.tobytes()).digest() for row in rows])


def _key_array(keys: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)


def register(keys: np.ndarray) -> str:
    """``local:<id>`` for the records with ``keys`` (any order, repeats ignored), kept in the index."""
    unique = _unique(keys)
    digest = hmac.new(_secret(), unique.tobytes(), hashlib.sha256).hexdigest()[:ID_CHARS]
    identity = f"{LOCAL}{digest}"
    _store(identity, unique)
    return identity


def register_named(identity: str, keys: np.ndarray) -> None:
    """Keep the keys of a named dataset's records under its public ``identity``."""
    _store(identity, _unique(keys))


def keys_of(identity: str | None) -> np.ndarray | None:
    """The sorted keys (N, 32) of ``identity``'s records, None when this machine's index does not hold them."""
    if identity is None:
        return None
    path = _path(identity)
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None


def overlap(first: str | None, second: str | None) -> bool | None:
    """Whether two uses share a record: True or False where the index holds both, None where it cannot tell."""
    a, b = keys_of(first), keys_of(second)
    if a is None or b is None:
        return None
    return bool(set(_rows(a)) & set(_rows(b)))


def shared_keys(identity: str, keys: np.ndarray) -> int | None:
    """How many of ``keys`` are among ``identity``'s records; None when the index does not hold it."""
    held = keys_of(identity)
    return None if held is None else len(set(_rows(held)) & set(_rows(keys)))


def _rows(keys: np.ndarray) -> list[bytes]:
    return [row.tobytes() for row in keys]


def _unique(keys: np.ndarray) -> np.ndarray:
    keys = np.ascontiguousarray(keys, dtype=np.uint8).reshape(-1, KEY_BYTES)
    return np.unique(keys, axis=0) if len(keys) else keys


def _path(identity: str) -> Path:
    return index_dir() / f"{hashlib.sha256(identity.encode()).hexdigest()[:32]}.npy"


def _store(identity: str, keys: np.ndarray) -> None:
    path = _path(identity)
    if path.is_file():
        return
    partial = path.with_suffix(f".{os.getpid()}.partial")
    with open(partial, "wb") as handle:
        np.save(handle, keys, allow_pickle=False)
    os.chmod(partial, 0o600)
    partial.replace(path)


def _secret() -> bytes:
    """This machine's key, drawn from the OS at first use and kept owner-only; never published. A new key is
    written whole beside its place and linked there, so that concurrent first uses agree on one key."""
    path = index_dir() / "secret.key"
    if not path.is_file():
        partial = path.with_suffix(f".{os.getpid()}.partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(secrets.token_bytes(KEY_BYTES))
        try:
            os.link(partial, path)
        except FileExistsError:
            pass  # another process drew the key first: use theirs
        finally:
            partial.unlink()
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise RuntimeError(f"{path} is not a dpzoo record-index key ({len(key)} bytes); remove it")
    return key
