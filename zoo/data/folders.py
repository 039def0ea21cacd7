"""Image folders (``root/<class>/*.png``, optionally ``root/train`` + ``root/test``) read once with PIL
into uint8 tensors, checked for what would otherwise fail deep inside training, and cached.

The *cache key* (file list, sizes, mtimes and decoding options) finds a decoded copy. Each image's *record
key* (``zoo.privacy.record_index.pixel_key``: its pixels at their own size, independent of file names, paths,
mtimes and decoding options) goes to the local record index, never into anything published. Which side of a
split a file falls on (held out, validation, training) is decided by a seeded hash of its own class and name
(``hashed_below``), so that adding or removing one file moves no other file.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
from zoo.data.folder_part import FolderPart
from zoo.data.settings import CACHE_DIR_ENV, DataNotFoundError, cache_dir
from zoo.errors import UserError
from zoo.privacy.record_index import KEY_BYTES, pixel_key

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N"})


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
                f"{root}: test/ has classes {list(test.classes)} but train/ has {list(train.classes)}; "
                "both must hold the same class folders"
            )
        return train, test
    return _part(root, classes), None


def _check_classes(classes: Sequence[str]) -> tuple[str, ...]:
    names = tuple(classes)
    if not names or any(not isinstance(n, str) or not n or "/" in n for n in names) or len(set(names)) < len(names):
        raise UserError(f"classes must be distinct class-folder names, at least one, got {list(names)!r}")
    return names


def _part(root: Path, given: tuple[str, ...] | None = None) -> FolderPart:
    entries = list(os.scandir(root))
    found = tuple(sorted(entry.name for entry in entries if entry.is_dir() and not entry.name.startswith(".")))
    if given is not None:
        outside = [name for name in found if name not in given]
        if outside:
            raise ImageFolderError(
                f"{root} holds class folders {outside} that are not among the classes given ({list(given)}): "
                "add them to the list, or move them out of the folder"
            )
    classes = found if given is None else given
    if not classes:
        loose = sum(1 for f in root.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
        hint = (
            f" (it holds {loose} images directly: move them into a sub-folder named after their class)" if loose else ""
        )
        raise DataNotFoundError(f"{root} has no class folders: expected {root}/<class>/*.png{hint}")
    ignored = sorted(entry.name for entry in entries if entry.is_file())
    files: list[Path] = []
    labels: list[int] = []
    for label, name in enumerate(classes):
        folder = root / name
        entries = sorted(e.name for e in os.scandir(folder) if e.is_file()) if folder.is_dir() else []
        images = [folder / e for e in entries if _is_image(e)]
        if not images and given is None:
            raise ImageFolderError(
                f"class folder {folder} holds no images ({', '.join(IMAGE_SUFFIXES)}); remove it or add images"
            )
        ignored += [f"{name}/{e}" for e in entries if not _is_image(e)]
        files += images
        labels += [label] * len(images)
    return FolderPart(root, classes, tuple(files), tuple(labels), tuple(ignored))


def _is_image(name: str) -> bool:
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in IMAGE_SUFFIXES


def warn_ignored(*parts: FolderPart | None) -> None:
    """Name the files that are not images (a warning: they change nothing, but nothing is skipped silently)."""
    for part in filter(None, parts):
        if part.ignored:
            warnings.warn(f"{part.root}: {ignored_line(part.ignored)}", stacklevel=3)


def subset(part: FolderPart, indices: Sequence[int]) -> FolderPart:
    """The files of ``part`` at ``indices``, as a part of its own (a held-out split)."""
    files, labels = tuple(part.files[i] for i in indices), tuple(part.labels[i] for i in indices)
    return FolderPart(part.root, part.classes, files, labels)


def held_out_indices(part: FolderPart, fraction: float, seed: int) -> list[int]:
    """The files a folder without ``test/`` keeps out of training: those whose seeded hash falls below
    ``fraction`` (``hashed_below``), so the split travels with a model as (fraction, seed)."""
    return hashed_below(part, range(len(part.files)), fraction, seed, "test")


def hashed_below(part: FolderPart, indices: Sequence[int], fraction: float, seed: int, purpose: str) -> list[int]:
    """The files among ``indices`` whose hash of (``purpose``, ``seed``, class, file name) falls below
    ``fraction``: each file's side depends on its own name alone, so adding or removing one file changes
    that file's side and no other's (a permutation of positions would move hundreds)."""
    return [i for i in indices if _name_share(part, i, seed, purpose) < fraction]


def _name_share(part: FolderPart, index: int, seed: int, purpose: str) -> float:
    """A uniform number in [0, 1) from the file's class and name."""
    name = f"{purpose}\0{seed}\0{part.classes[part.labels[index]]}/{part.files[index].name}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") / 2**64


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
            return DecodedImages(images, labels, part.classes, keys)
        except (SafetensorError, OSError, KeyError, ValueError):
            cached.unlink(missing_ok=True)  # a partial or stale copy: decode again
    decoded = decode_part(part, size, channels, convert, along)
    if cache:
        _write_cache(cached, decoded)
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
    try:
        with Image.open(io.BytesIO(file.read_bytes())) as image:
            if image.mode in SIXTEEN_BIT_MODES:  # PIL's convert("L") clips 16-bit values instead of scaling
                image = Image.fromarray((np.asarray(image, dtype=np.float64) / 257).round().astype(np.uint8))
            key = pixel_key(np.asarray(image.convert("RGB"), dtype=np.uint8))  # at the image's own size
            if convert and has_transparency(image):
                image = on_white(image)
            image = fitted(image.convert("L" if channels == 1 else "RGB"), size, convert)
            array = np.asarray(image, dtype=np.uint8)
    except (OSError, SyntaxError, ValueError) as error:
        raise ImageFolderError(f"{file} is corrupt or truncated ({error}); remove or replace it") from None
    return (array[:, :, None] if channels == 1 else array), key


def _progress(files: Sequence[Path], description: str):
    quiet = True if len(files) < PROGRESS_FROM else None  # None: no bar when stderr is not a terminal (logs, CI)
    return tqdm(files, desc=description, unit="image", disable=quiet, leave=False)


def _cache_path(key: str) -> Path:
    return cache_dir() / "image-folders" / f"{key}.safetensors"


def _write_cache(path: Path, decoded: DecodedImages) -> None:
    """Write atomically, readable by the owner only: these are the private images."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        tensors = {"images": decoded.images, "labels": decoded.labels, "keys": decoded.record_keys}
        save_file(tensors, str(partial))
        os.chmod(partial, 0o600)
        partial.replace(path)
    except OSError as error:
        warnings.warn(
            f"could not cache the decoded images in {path.parent} ({error}); set {CACHE_DIR_ENV}", stacklevel=3
        )
