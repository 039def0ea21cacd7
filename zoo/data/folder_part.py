"""One split of an image folder (``root/<class>/*``, sub-folders of a class included): its files, labels and
classes, and the key under which its decoded copy is cached. Both the folder check and the reader take parts."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

#: the files a class folder's images are read from (the summary names the rest)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")

#: bump when decoding changes, so that old cached copies are not served
CACHE_FORMAT = 2  # 2: each image's record key (zoo.privacy.record_index) is cached too


@dataclass(frozen=True)
class FolderPart:
    """The images of one split of a folder: files in class order, their labels and the class names."""

    root: Path
    classes: tuple[str, ...]
    files: tuple[Path, ...]
    labels: tuple[int, ...]
    #: files that are not images, relative to ``root`` (named wherever the folder is described)
    ignored: tuple[str, ...] = ()
    #: the data the part's rows come from, as the user gave it (a table, a saved dataset: ``zoo.data.row_parts``);
    #: None for a folder's part, which is the data
    source: Path | None = None

    def cache_key(self, size: tuple[int, int] | None, channels: int | None, convert: str | None = None) -> str:
        """Changes with any file's path, size or mtime, or with the decoding options."""
        options = [CACHE_FORMAT, str(self.root.resolve()), size, channels, *([convert] if convert else [])]
        digest = hashlib.sha256(json.dumps(options).encode())
        for file in self.files:
            stat = file.stat()
            digest.update(f"{file.relative_to(self.root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()


def is_hidden(name: str) -> bool:
    """A file or folder that is no one's image or class: hidden ones (``.DS_Store``, ``.ipynb_checkpoints``,
    ``.git``) and the resource forks an unzipped macOS archive leaves (``__MACOSX``, whose ``._photo.jpg`` files
    are not images)."""
    return name.startswith(".") or name == "__MACOSX"


def class_files(folder: Path) -> tuple[list[str], list[str]]:
    """Every file under a class folder, its sub-folders included (``Birds/2019/*.jpg`` are birds), as sorted paths
    relative to it; and the hidden folders not entered (``is_hidden``), each with a trailing ``/``."""
    files: list[str] = []
    skipped: list[str] = []
    for path, folders, names in os.walk(folder):
        relative = Path(path).relative_to(folder)
        skipped += [f"{(relative / name).as_posix()}/" for name in folders if is_hidden(name)]
        folders[:] = [name for name in folders if not is_hidden(name)]
        files += [(relative / name).as_posix() for name in names if os.path.isfile(os.path.join(path, name))]
    return sorted(files), sorted(skipped)


def names_root(data: Path, part: FolderPart) -> Path:
    """The folder the files of ``part`` are named relative to wherever the data is described: the folder given (of
    ``train/`` and ``test/``, or of the classes), else the part's own root (a table's folder, the cache a ``datasets``
    dataset's images were written to: ``zoo.data.row_parts``)."""
    return data if data.is_dir() and part.root.is_relative_to(data) else part.root
