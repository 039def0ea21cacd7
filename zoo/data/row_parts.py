"""Rows of images and labels (a table's, a ``datasets`` dataset's) as a ``FolderPart``, so that they are decoded,
checked, split by their pixels, indexed and described by the folder machinery unchanged (``zoo.data.folders``).

An image given as a path is that file (relative to the table's folder); an image given as bytes (a ``datasets``
Image column, a Parquet export of one) is written once to an owner-only folder under ``DPZOO_CACHE_DIR``, since
it is the user's private image, and read from there. Torch-free."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.data.folder_check import ImageFolderError
from zoo.data.folder_part import IMAGE_SUFFIXES, FolderPart
from zoo.errors import UserError
from zoo.local_state import cache_dir

#: the image column taken when none is given, the first of these that the data has
IMAGE_COLUMNS = ("image", "file_name", "path", "file", "filename", "img")
LABEL_COLUMN = "label"
#: how a file of image bytes is named, by its first bytes (the folder reader takes these suffixes)
MAGIC = ((b"\x89PNG", ".png"), (b"\xff\xd8", ".jpg"), (b"BM", ".bmp"), (b"RIFF", ".webp"))
#: how many missing files a refusal names
NAMED = 5


@dataclass(frozen=True)
class Columns:
    """The columns images and labels are read from."""

    image: str
    label: str


def pick_columns(
    columns: Sequence[str],
    image_column: str | None,
    label_column: str | None,
    where: str,
    image_default: str | None = None,
    label_default: str | None = None,
) -> Columns:
    """The columns given, else the defaults (``image_default``, else the first of ``IMAGE_COLUMNS`` present; ``label``),
    refused in one line naming the columns ``where`` has."""
    image = image_column or image_default or next((name for name in IMAGE_COLUMNS if name in columns), None)
    label = label_column or label_default or LABEL_COLUMN
    names = ", ".join(columns) or "none"
    for option, name, given in (("image_column", image, image_column), ("label_column", label, label_column)):
        if name is None or name not in columns:
            said = f"has no column {name!r}" if name else f"has none of the image columns {', '.join(IMAGE_COLUMNS)}"
            hint = "" if given else f": name it with {option} (dpzoo train --{option.replace('_', '-')})"
            raise UserError(f"{where} {said} (its columns: {names}){hint}")
    assert image is not None
    return Columns(image, label)


def rows_part(
    root: Path,
    files: Sequence[Path],
    values: Sequence[Any],
    classes: Sequence[str] | None,
    source: Path,
    class_names: Sequence[str] | None = None,
) -> FolderPart:
    """A part of ``files`` with labels ``values``: indices into ``class_names`` where the data names its classes (a
    ``ClassLabel``), else the values themselves, whose sorted distinct spellings are the classes (numbers in their
    order). ``classes`` fixes the label set and its order, as a folder's ``--classes`` does: a row of another class is
    refused. Files are taken in class order, then by path; a row that is not an image file is ignored, and named.
    ``source``: the table or dataset the rows come from, which refusals name."""
    where = str(source)
    spelled = [class_names[int(value)] if class_names is not None else str(value) for value in values]
    found = list(class_names) if class_names is not None else _sorted_classes(values)
    names = tuple(classes) if classes else tuple(found)
    outside = sorted(set(spelled) - set(names))
    if outside:
        raise ImageFolderError(
            f"{where} has rows of classes {', '.join(outside[:NAMED])} that are not among the classes given "
            f"({', '.join(names)}): add them to the list, or drop those rows"
        )
    index = {name: label for label, name in enumerate(names)}
    rows = sorted(zip((index[name] for name in spelled), files, strict=True), key=lambda row: (row[0], str(row[1])))
    missing = [str(file) for _, file in rows if not file.is_file()]
    if missing:
        more = f" and {len(missing) - NAMED} more" if len(missing) > NAMED else ""
        raise ImageFolderError(
            f"{where} names {len(missing)} files that do not exist: {', '.join(missing[:NAMED])}{more}"
        )
    images = [(label, file) for label, file in rows if file.suffix.lower() in IMAGE_SUFFIXES]
    ignored = tuple(_relative(file, root) for _, file in rows if file.suffix.lower() not in IMAGE_SUFFIXES)
    files = tuple(file for _, file in images)
    return FolderPart(root, names, files, tuple(label for label, _ in images), ignored, source)


def written_images(images: Sequence[bytes], key: str) -> list[Path]:
    """``images`` (encoded bytes) as files in an owner-only folder of the cache named by ``key`` (written once: the
    folder is complete when its ``done`` marker is)."""
    folder = cache_dir() / "sources" / hashlib.sha256(key.encode()).hexdigest()[:32]
    files = [folder / f"{row:07d}{_suffix(data)}" for row, data in enumerate(images)]
    if (folder / "done").is_file():
        return files
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    for file, data in zip(files, images, strict=True):
        file.write_bytes(data)
    (folder / "done").write_text(str(len(files)))
    return files


def _suffix(data: bytes) -> str:
    return next((suffix for magic, suffix in MAGIC if data.startswith(magic)), ".png")


def _sorted_classes(values: Sequence[Any]) -> list[str]:
    distinct = set(values)
    numbers = all(isinstance(value, int) and not isinstance(value, bool) for value in distinct)
    return [str(value) for value in sorted(distinct, key=lambda value: value if numbers else str(value))]


def _relative(file: Path, root: Path) -> str:
    try:
        return file.relative_to(root).as_posix()
    except ValueError:
        return str(file)
