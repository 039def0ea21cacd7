"""Image folders (``root/<class>/*.png``, optionally ``root/train`` + ``root/test``) read once with PIL
into uint8 tensors, checked for what would otherwise fail deep inside training, and cached.

Two fingerprints: the *cache key* (file list, sizes, mtimes and decoding options) finds a decoded
copy; the *content digest* (each file's bytes with its class, independent of file names, paths,
mtimes and decoding options) names the records in the privacy ledger, so that the same images
compose with earlier entries wherever they lie and whatever size they are decoded to.
"""

from __future__ import annotations

import hashlib
import io
import json
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

from zoo.data.images import DataNotFoundError
from zoo.data.settings import CACHE_DIR_ENV, cache_dir

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
#: PIL modes whose images are grey; every other mode is read as colour
GREY_MODES = frozenset({"1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"})
SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N"})
#: bump when decoding changes, so that old cached copies are not served
CACHE_FORMAT = 1
PROGRESS_FROM = 2000


class ImageFolderError(ValueError):
    """An image folder that cannot be used as it is (the message says what to change)."""


@dataclass(frozen=True)
class FolderPart:
    """The images of one split of a folder: files in class order, their labels and the class names."""

    root: Path
    classes: tuple[str, ...]
    files: tuple[Path, ...]
    labels: tuple[int, ...]
    skipped: int

    def cache_key(self, size: tuple[int, int] | None, channels: int | None) -> str:
        """Changes with any file's path, size or mtime, or with the decoding options."""
        digest = hashlib.sha256(json.dumps([CACHE_FORMAT, str(self.root.resolve()), size, channels]).encode())
        for file in self.files:
            stat = file.stat()
            digest.update(f"{file.relative_to(self.root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class DecodedImages:
    images: Tensor  # uint8 (N, C, H, W)
    labels: Tensor  # int64 (N,)
    classes: tuple[str, ...]
    #: sha256 over each file's bytes and class, in sorted order (independent of names and paths)
    content_digest: str


def folder_parts(root: str | Path) -> tuple[FolderPart, FolderPart | None]:
    """(train, test) parts of ``root``: ``root/train`` and ``root/test`` when both exist, else
    ``root`` itself and no test part. Classes are the sorted sub-folder names (torchvision's
    ``ImageFolder``); the test part must have the train part's classes."""
    root = Path(root).expanduser()
    if not root.exists():
        raise DataNotFoundError(f"no image folder at {root}")
    if not root.is_dir():
        raise ImageFolderError(f"{root} is a file; pass the folder that holds one sub-folder per class")
    if (root / "train").is_dir() and (root / "test").is_dir():
        train, test = _part(root / "train"), _part(root / "test")
        if test.classes != train.classes:
            raise ImageFolderError(
                f"{root}: test/ has classes {list(test.classes)} but train/ has {list(train.classes)}; "
                "both must hold the same class folders"
            )
        return train, test
    return _part(root), None


def _part(root: Path) -> FolderPart:
    classes = tuple(
        sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))
    )
    if not classes:
        loose = sum(1 for f in root.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
        hint = (
            f" (it holds {loose} images directly: move them into a sub-folder named after their class)" if loose else ""
        )
        raise DataNotFoundError(f"{root} has no class folders: expected {root}/<class>/*.png{hint}")
    files: list[Path] = []
    labels: list[int] = []
    skipped = 0
    for label, name in enumerate(classes):
        entries = sorted(e.name for e in os.scandir(root / name) if e.is_file() and not e.name.startswith("."))
        images = [root / name / e for e in entries if os.path.splitext(e)[1].lower() in IMAGE_SUFFIXES]
        if not images:
            raise ImageFolderError(
                f"class folder {root / name} holds no images ({', '.join(IMAGE_SUFFIXES)}); remove it or add images"
            )
        skipped += len(entries) - len(images)
        files += images
        labels += [label] * len(images)
    if skipped:
        warnings.warn(
            f"{root}: skipped {skipped} files that are not images ({', '.join(IMAGE_SUFFIXES)})", stacklevel=3
        )
    return FolderPart(root, classes, tuple(files), tuple(labels), skipped)


def read_part(
    part: FolderPart,
    size: tuple[int, int] | None = None,
    channels: int | None = None,
    cache: bool = True,
) -> DecodedImages:
    """The part's images as uint8 (N, C, H, W), from the cache when its key matches, else decoded."""
    key = part.cache_key(size, channels)
    cached = _cache_path(key)
    if cache and cached.is_file():
        try:
            with safe_open(str(cached), "pt") as stored:
                images, labels = stored.get_tensor("images"), stored.get_tensor("labels")
                digest = stored.metadata()["digest"]
            return DecodedImages(images, labels, part.classes, digest)
        except (SafetensorError, OSError, KeyError, ValueError):
            cached.unlink(missing_ok=True)  # a partial or stale copy: decode again
    decoded = decode_part(part, size, channels)
    if cache:
        _write_cache(cached, decoded)
    return decoded


def decode_part(part: FolderPart, size: tuple[int, int] | None, channels: int | None) -> DecodedImages:
    """Check every file's header (size, grey or colour), then decode all into one uint8 tensor."""
    headers = [_header(file) for file in _progress(part.files, "reading image headers")]
    target_size = size or _common_size(part.files, [h[0] for h in headers])
    target_channels = channels or _common_channels(part.files, [h[1] for h in headers])
    height, width = target_size
    images = np.empty((len(part.files), height, width, target_channels), dtype=np.uint8)
    content = []
    for index, file in enumerate(_progress(part.files, f"decoding {part.root}")):
        data = file.read_bytes()
        content.append(_content_line(part.classes[part.labels[index]], data))
        images[index] = _decode(data, file, target_size, target_channels)
    digest = _content_digest(content)
    return DecodedImages(
        torch.from_numpy(images).permute(0, 3, 1, 2).contiguous(),
        torch.tensor(part.labels, dtype=torch.int64),
        part.classes,
        digest,
    )


def content_digest(part: FolderPart) -> str:
    """The part's ``DecodedImages.content_digest`` from its files' bytes, without decoding them."""
    files = zip(part.files, part.labels, strict=True)
    return _content_digest([_content_line(part.classes[label], file.read_bytes()) for file, label in files])


def _content_line(class_name: str, data: bytes) -> str:
    return f"{class_name}\0{hashlib.sha256(data).hexdigest()}"


def _content_digest(lines: list[str]) -> str:
    """sha256 over each file's bytes and class, in sorted order (independent of names and paths)."""
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()


def check_image_size(image_size: int | Sequence[int] | None) -> tuple[int, int] | None:
    """``image_size`` as (H, W): an int is a square side."""
    if image_size is None:
        return None
    sides = [image_size] if isinstance(image_size, int) else list(image_size)
    if len(sides) not in (1, 2) or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sides):
        raise ValueError(f"image_size must be a positive int or (height, width), got {image_size!r}")
    return (sides[0], sides[-1])


def _header(file: Path) -> tuple[tuple[int, int], bool]:
    """(height, width) and whether it is grey, from the header alone."""
    try:
        with Image.open(file) as image:
            return (image.height, image.width), image.mode in GREY_MODES
    except (OSError, SyntaxError, ValueError) as error:  # PIL's UnidentifiedImageError is an OSError
        raise ImageFolderError(f"{file} is not a readable image ({error}); remove or replace it") from None


def _decode(data: bytes, file: Path, size: tuple[int, int], channels: int) -> np.ndarray:
    """``data``, the bytes of ``file``, as a uint8 (H, W, C) array."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.mode in SIXTEEN_BIT_MODES:  # PIL's convert("L") clips 16-bit values instead of scaling
                image = Image.fromarray((np.asarray(image, dtype=np.float64) / 257).round().astype(np.uint8))
            image = image.convert("L" if channels == 1 else "RGB")
            if image.size != (size[1], size[0]):
                image = image.resize((size[1], size[0]), Image.Resampling.BILINEAR)
            array = np.asarray(image, dtype=np.uint8)
    except (OSError, SyntaxError, ValueError) as error:
        raise ImageFolderError(f"{file} is corrupt or truncated ({error}); remove or replace it") from None
    return array[:, :, None] if channels == 1 else array


def _common_size(files: Sequence[Path], sizes: list[tuple[int, int]]) -> tuple[int, int]:
    for file, size in zip(files, sizes, strict=True):
        if size != sizes[0]:
            raise ImageFolderError(
                f"images differ in size: {files[0]} is {sizes[0][0]}×{sizes[0][1]} (height×width), {file} is "
                f"{size[0]}×{size[1]}; set image_size (e.g. image_size={min(min(s) for s in sizes)}) to resize all"
            )
    return sizes[0]


def _common_channels(files: Sequence[Path], grey: list[bool]) -> int:
    if all(grey):
        return 1
    if any(grey):
        first_grey, first_colour = files[grey.index(True)], files[grey.index(False)]
        raise ImageFolderError(
            f"the folder mixes grey and colour images ({first_grey} is grey, {first_colour} colour); set channels=1 "
            "to read all as grey or channels=3 to read all as RGB"
        )
    return 3


def _progress(files: Sequence[Path], description: str):  # type: ignore[no-untyped-def]
    quiet = True if len(files) < PROGRESS_FROM else None  # None: no bar when stderr is not a terminal (logs, CI)
    return tqdm(files, desc=description, unit="image", disable=quiet, leave=False)


def _cache_path(key: str) -> Path:
    return cache_dir() / "image-folders" / f"{key}.safetensors"


def _write_cache(path: Path, decoded: DecodedImages) -> None:
    """Write atomically, readable by the owner only: these are the private images."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        save_file(
            {"images": decoded.images, "labels": decoded.labels}, str(partial), {"digest": decoded.content_digest}
        )
        os.chmod(partial, 0o600)
        partial.replace(path)
    except OSError as error:
        warnings.warn(
            f"could not cache the decoded images in {path.parent} ({error}); set {CACHE_DIR_ENV}", stacklevel=3
        )
