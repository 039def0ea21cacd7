"""Image folders (``root/<class>/*.png``, sub-folders of a class included, optionally ``root/train`` +
``root/test``) read once with PIL into uint8 tensors, checked for what would otherwise fail deep inside training,
and cached.

The *cache key* (file list, sizes, mtimes and decoding options) finds a decoded copy. Each image's *record
key* (``zoo.privacy.record_index.pixel_key``: its pixels at their own size, independent of file names, paths,
mtimes and decoding options) goes to the local record index, never into anything published. A record is an
image, not a file: files with one record key are one record, trained once (``split_by_pixels``). Which side of a
split an image falls on (held out, validation, training) is decided by a seeded hash of its record key
(``hashed_below``), so that every copy of it falls on that side and adding or removing one image moves no other.
Models recorded before this rule (``SPLIT_RULE``, absent from their held-out record) split each file directly in a
class folder by a hash of its class and name (``held_out_by_name``), which evaluation still rebuilds for them.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from PIL import Image
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor
from tqdm.auto import tqdm

from zoo.data.conversion import check_convert, fitted, has_transparency, on_white
from zoo.data.folder_check import (
    PROGRESS_FROM,
    FolderProblems,
    ImageFolderError,
    common_channels,
    common_size,
    folder_problems,
    ignored_line,
    inspect_part,
)
from zoo.data.folder_part import IMAGE_SUFFIXES, FolderPart, class_files, is_hidden
from zoo.data.settings import CACHE_DIR_ENV, DataNotFoundError, cache_dir
from zoo.errors import DPZooWarning, UserError
from zoo.privacy.record_index import KEY_BYTES, pixel_key

Read = TypeVar("Read")

SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N"})
#: the split rule of this version, as a model's held-out record (``split``) and its dataset id name it: each distinct
#: image by a seeded hash of its record key. A record without it was split by file names (``held_out_by_name``).
SPLIT_RULE = "by pixels"


@dataclass(frozen=True)
class DecodedImages:
    images: Tensor  # uint8 (N, C, H, W)
    labels: Tensor  # int64 (N,)
    classes: tuple[str, ...]
    #: each image's record key (N, 32) uint8, from its pixels at their own size (``zoo.privacy.record_index``)
    record_keys: Tensor


def folder_parts(root: str | Path, classes: Sequence[str] | None = None) -> tuple[FolderPart, FolderPart | None]:
    """(train, test) parts of ``root``: ``root/train`` and ``root/test`` when both exist, else
    ``root`` itself and no test part. Classes are the sorted sub-folder names (torchvision's
    ``ImageFolder``); the test part must have the train part's classes. Given ``classes``, the label set is
    that list in its order, whichever folders hold images: a listed class may have no folder or no images,
    and a folder outside the list is refused (the labels, public on a card, then depend on no image)."""
    root = Path(root).expanduser()
    if not root.exists():
        raise DataNotFoundError(f"no image folder at {root}")
    if not root.is_dir():
        raise ImageFolderError(f"{root} is a file; pass the folder that holds one sub-folder per class")
    if classes is not None:
        classes = _check_classes(classes)
    if (root / "train").is_dir() and (root / "test").is_dir():
        train, test = _part(root / "train", classes), _part(root / "test", classes)
        if test.classes != train.classes:
            raise ImageFolderError(
                f"{root}: test/ has classes {', '.join(test.classes)} but train/ has {', '.join(train.classes)}; "
                "both must hold the same class folders"
            )
        return train, test
    return _part(root, classes), None


def folder_source_parts(
    root: Path, classes: Sequence[str] | None, image_column: str | None, label_column: str | None
) -> tuple[FolderPart, FolderPart | None]:
    """``folder_parts`` as the registry of sources reads local data (``zoo.data.sources``: a folder has no columns)."""
    return folder_parts(root, classes)


def _check_classes(classes: Sequence[str]) -> tuple[str, ...]:
    names = tuple(classes)
    if not names or any(not isinstance(n, str) or not n or "/" in n for n in names) or len(set(names)) < len(names):
        raise UserError(f"classes must be distinct class-folder names, at least one, got {', '.join(map(repr, names))}")
    return names


def _part(root: Path, given: tuple[str, ...] | None = None) -> FolderPart:
    entries = list(os.scandir(root))
    found = tuple(sorted(entry.name for entry in entries if entry.is_dir() and not is_hidden(entry.name)))
    if given is not None:
        outside = [name for name in found if name not in given]
        if outside:
            raise ImageFolderError(
                f"{root} holds class folders {', '.join(outside)} that are not among the classes given "
                f"({', '.join(given)}): add them to the list, or move them out of the folder"
            )
    classes = found if given is None else given
    if not classes:
        loose = sum(1 for f in root.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
        hint = (
            f" (it holds {loose} images directly: move them into a sub-folder named after their class)" if loose else ""
        )
        raise DataNotFoundError(f"{root} has no class folders: expected {root}/<class>/*.png{hint}")
    ignored = sorted(entry.name for entry in entries if entry.is_file())
    ignored += sorted(f"{entry.name}/" for entry in entries if entry.is_dir() and is_hidden(entry.name))
    files: list[Path] = []
    labels: list[int] = []
    for label, name in enumerate(classes):
        folder = root / name
        found_files, skipped = class_files(folder)
        images = [folder / e for e in found_files if _is_image(e)]
        if not images and given is None:
            raise ImageFolderError(
                f"class folder {folder} holds no images ({', '.join(IMAGE_SUFFIXES)}); remove it or add images"
            )
        ignored += [f"{name}/{e}" for e in [*(e for e in found_files if not _is_image(e)), *skipped]]
        files += images
        labels += [label] * len(images)
    return FolderPart(root, classes, tuple(files), tuple(labels), tuple(ignored))


def _is_image(path: str) -> bool:
    name = os.path.basename(path)
    return not is_hidden(name) and os.path.splitext(name)[1].lower() in IMAGE_SUFFIXES


def warn_ignored(*parts: FolderPart | None) -> None:
    """Name the files that are not images and the hidden folders (a warning: they change nothing, but nothing is
    skipped silently)."""
    for part in filter(None, parts):
        if part.ignored:
            warnings.warn(f"{part.root}: {ignored_line(part.ignored)}", DPZooWarning, stacklevel=3)


def subset(part: FolderPart, indices: Sequence[int]) -> FolderPart:
    """The files of ``part`` at ``indices``, as a part of its own (a held-out split)."""
    files, labels = tuple(part.files[i] for i in indices), tuple(part.labels[i] for i in indices)
    return FolderPart(part.root, part.classes, files, labels, source=part.source)


@dataclass(frozen=True)
class FolderSplit:
    """Which of a part's files train, validate and are held out (indices in class and file order): each distinct
    image once, as its first file; ``duplicates`` are the groups of files that hold one image, first file first."""

    train: tuple[int, ...]
    validation: tuple[int, ...]
    held_out: tuple[int, ...]
    duplicates: tuple[tuple[int, ...], ...]

    def sides(self) -> dict[int, str]:
        """Every file's side ("train", "validation" or "test"), a copy's that of its image: where a file falls
        depends on its pixels alone, which no other file's presence moves."""
        sides = {
            **dict.fromkeys(self.train, "train"),
            **dict.fromkeys(self.validation, "validation"),
            **dict.fromkeys(self.held_out, "test"),
        }
        for first, *copies in self.duplicates:
            sides.update(dict.fromkeys(copies, sides[first]))
        return dict(sorted(sides.items()))


def split_by_pixels(keys: np.ndarray, test_fraction: float, validation_size: float, seed: int) -> FolderSplit:
    """The split of a part whose files have the record ``keys`` (N, 32): the first file of each distinct image is
    held out when its hash (``hashed_below``) falls below ``test_fraction``, else validates when another falls below
    ``validation_size``, else trains; its other files are not used. A copy is the same record (its owner's photo),
    so training it twice would protect that owner at about twice the stated ε, and a copy on each side would put a
    protected record among the held-out images."""
    duplicates = duplicate_groups(keys)
    copies = {index for group in duplicates for index in group[1:]}
    distinct = [index for index in range(len(keys)) if index not in copies]
    held_out = hashed_below(keys, distinct, test_fraction, seed, "test")
    rest = sorted(set(distinct) - set(held_out))
    validation = hashed_below(keys, rest, validation_size, seed, "validation")
    train = sorted(set(rest) - set(validation))
    return FolderSplit(tuple(train), tuple(validation), tuple(held_out), duplicates)


def duplicate_groups(keys: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """The groups of two or more files with one record key, each in file order, ordered by their first file."""
    groups: dict[bytes, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key.tobytes(), []).append(index)
    return tuple(tuple(group) for group in groups.values() if len(group) > 1)


def hashed_below(keys: np.ndarray, indices: Sequence[int], fraction: float, seed: int, purpose: str) -> list[int]:
    """The files among ``indices`` whose hash of (``purpose``, ``seed``, record key) falls below ``fraction``: each
    image's side depends on its own pixels alone, so that its copies share it and adding or removing one image
    changes that image's side and no other's (a permutation of positions would move hundreds)."""
    return [i for i in indices if _share(f"{purpose}\0{seed}\0".encode() + keys[i].tobytes()) < fraction]


def held_out_indices(part: FolderPart, fraction: float, seed: int, split: str | None = SPLIT_RULE) -> list[int]:
    """The files a folder without ``test/`` keeps out of training by the rule a model recorded with (fraction,
    seed): ``split`` is ``SPLIT_RULE``, or None for a model recorded before it (``held_out_by_name``)."""
    if split is None:
        return held_out_by_name(part, fraction, seed)
    if split != SPLIT_RULE:
        raise UserError(
            f"the held-out part was recorded under the split rule {split!r}, which this dpzoo does not know "
            f"(it knows {SPLIT_RULE!r}): evaluate with the dpzoo that trained the model"
        )
    return list(split_by_pixels(record_keys_of(part), fraction, 0.0, seed).held_out)


def held_out_by_name(part: FolderPart, fraction: float, seed: int) -> list[int]:
    """The held-out part of the rule before ``SPLIT_RULE``: each file directly in a class folder (sub-folders
    were not read then) whose hash of ("test", ``seed``, class, file name) falls below ``fraction``."""
    flat = [i for i, file in enumerate(part.files) if len(file.relative_to(part.root).parts) == 2]
    return named_below(part, flat, fraction, seed, "test")


def named_below(part: FolderPart, indices: Sequence[int], fraction: float, seed: int, purpose: str) -> list[int]:
    """The rule before ``SPLIT_RULE``, for models that recorded it: the files among ``indices`` whose hash of
    (``purpose``, ``seed``, class, file name) falls below ``fraction``."""
    return [i for i in indices if _name_share(part, i, seed, purpose) < fraction]


def _name_share(part: FolderPart, index: int, seed: int, purpose: str) -> float:
    """A uniform number in [0, 1) from the file's class and name."""
    return _share(f"{purpose}\0{seed}\0{part.classes[part.labels[index]]}/{part.files[index].name}".encode())


def _share(text: bytes) -> float:
    """A uniform number in [0, 1) from ``text``."""
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") / 2**64


def record_keys_of(part: FolderPart) -> np.ndarray:
    """Each file's record key (N, 32) uint8, from its pixels at their own size: the split of a part whose images
    are not needed (a model's held-out part, rebuilt). Cached beside the decoded copies, which write it too."""
    path = _keys_path(part)
    if path.is_file():
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
    keys = np.empty((len(part.files), KEY_BYTES), dtype=np.uint8)
    for index, file in enumerate(_progress(part.files, f"reading {part.root}")):
        keys[index] = np.frombuffer(_opened(file, _record_key), dtype=np.uint8)
    _write_keys(path, keys)
    return keys


def read_part(
    part: FolderPart,
    size: tuple[int, int] | None = None,
    channels: int | None = None,
    cache: bool = True,
    convert: str | None = None,
    along: Sequence[FolderPart] = (),
) -> DecodedImages:
    """The part's images as uint8 (N, C, H, W), from the cache when its key matches, else checked (with the
    parts ``along`` it, so that one report names every problem of the folder) and decoded."""
    convert = check_convert(convert)
    key = part.cache_key(size, channels, convert)
    cached = _cache_path(key)
    if cache and cached.is_file():
        try:
            with safe_open(str(cached), "pt") as stored:
                images, labels, keys = (stored.get_tensor(name) for name in ("images", "labels", "keys"))
            _keep_keys(part, keys)
            return DecodedImages(images, labels, part.classes, keys)
        except (SafetensorError, OSError, KeyError, ValueError):
            cached.unlink(missing_ok=True)  # a partial or stale copy: decode again
    decoded = decode_part(part, size, channels, convert, along)
    if cache:
        _write_cache(cached, decoded)
        _keep_keys(part, decoded.record_keys)
    return decoded


def decode_part(
    part: FolderPart,
    size: tuple[int, int] | None,
    channels: int | None,
    convert: str | None = None,
    along: Sequence[FolderPart] = (),
) -> DecodedImages:
    """Check every file (``zoo.data.folder_check``: all problems at once), then decode all into one uint8 tensor."""
    inspected = [inspect_part(p) for p in (part, *along)]
    problems = folder_problems(inspected, size, channels, convert)
    if problems:
        raise FolderProblems(problems, [part, *along])
    facts = inspected[0].readable()
    target_size = size or common_size(facts)
    target_channels = channels or common_channels(facts)
    height, width = target_size
    images = np.empty((len(part.files), height, width, target_channels), dtype=np.uint8)
    keys = np.empty((len(part.files), KEY_BYTES), dtype=np.uint8)
    for index, file in enumerate(_progress(part.files, f"decoding {part.root}")):
        images[index], key = _decode(file, target_size, target_channels, convert)
        keys[index] = np.frombuffer(key, dtype=np.uint8)
    return DecodedImages(
        torch.from_numpy(images).permute(0, 3, 1, 2).contiguous(),
        torch.tensor(part.labels, dtype=torch.int64),
        part.classes,
        torch.from_numpy(keys),
    )


def check_image_size(image_size: int | Sequence[int] | None) -> tuple[int, int] | None:
    """``image_size`` as (H, W): an int is a square side."""
    if image_size is None:
        return None
    sides = [image_size] if isinstance(image_size, int) else list(image_size)
    if len(sides) not in (1, 2) or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sides):
        raise UserError(f"image_size must be a positive int or (height, width), got {image_size!r}")
    return (sides[0], sides[-1])


def _decode(file: Path, size: tuple[int, int], channels: int, convert: str | None) -> tuple[np.ndarray, bytes]:
    """The image in ``file`` as a uint8 (H, W, C) array (``zoo.data.conversion``), and its record key."""

    def read(image: Image.Image) -> tuple[np.ndarray, bytes]:
        key = _record_key(image)
        if convert and has_transparency(image):
            image = on_white(image)
        array = np.asarray(fitted(image.convert("L" if channels == 1 else "RGB"), size, convert), dtype=np.uint8)
        return (array[:, :, None] if channels == 1 else array), key

    return _opened(file, read)


def _opened(file: Path, read: Callable[[Image.Image], Read]) -> Read:
    """``read`` of the image in ``file``, 16-bit grey scaled to 8 bits (PIL's ``convert("L")`` clips 16-bit values
    instead of scaling them); a file PIL cannot decode is refused by name."""
    try:
        with Image.open(io.BytesIO(file.read_bytes())) as image:
            if image.mode in SIXTEEN_BIT_MODES:
                image = Image.fromarray((np.asarray(image, dtype=np.float64) / 257).round().astype(np.uint8))
            return read(image)
    except (OSError, SyntaxError, ValueError) as error:
        raise ImageFolderError(f"{file} is corrupt or truncated ({error}); remove or replace it") from None


def _record_key(image: Image.Image) -> bytes:
    """The image's record key (``zoo.privacy.record_index.pixel_key``), from its pixels at its own size."""
    return pixel_key(np.asarray(image.convert("RGB"), dtype=np.uint8))


def _progress(files: Sequence[Path], description: str):
    quiet = True if len(files) < PROGRESS_FROM else None  # None: no bar when stderr is not a terminal (logs, CI)
    return tqdm(files, desc=description, unit="image", disable=quiet, leave=False)


def _cache_path(key: str) -> Path:
    return cache_dir() / "image-folders" / f"{key}.safetensors"


def _keys_path(part: FolderPart) -> Path:
    """Where the part's record keys are kept: under the key of its files alone, whatever the decoding options."""
    return cache_dir() / "image-folders" / f"{part.cache_key(None, None)}.keys.npy"


def _write_cache(path: Path, decoded: DecodedImages) -> None:
    """Readable by the owner only: these are the private images."""
    tensors = {"images": decoded.images, "labels": decoded.labels, "keys": decoded.record_keys}
    _write_owner_only(path, lambda partial: save_file(tensors, str(partial)), "the decoded images")


def _keep_keys(part: FolderPart, keys: Tensor) -> None:
    """Keep the part's record keys where ``record_keys_of`` finds them, unless they are kept already."""
    if not _keys_path(part).is_file():
        _write_keys(_keys_path(part), keys.numpy())


def _write_keys(path: Path, keys: np.ndarray) -> None:
    """Readable by the owner only, as the local record index keeps its keys."""

    def write(partial: Path) -> None:
        with open(partial, "wb") as handle:  # a handle: given a name, np.save would add .npy to it
            np.save(handle, keys, allow_pickle=False)

    _write_owner_only(path, write, "the record keys")


def _write_owner_only(path: Path, write: Callable[[Path], None], what: str) -> None:
    """``write`` to a file beside ``path``, made owner-only and moved in whole (never a partial copy at ``path``);
    a failure costs a later run the decoding, and is said."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        write(partial)
        os.chmod(partial, 0o600)
        partial.replace(path)
    except OSError as error:
        warnings.warn(
            f"could not cache {what} in {path.parent} ({error}); set {CACHE_DIR_ENV}", DPZooWarning, stacklevel=4
        )
