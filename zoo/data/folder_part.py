"""One split of an image folder (``root/<class>/*``): its files, labels and classes, and the key under
which its decoded copy is cached. Both the folder check and the reader take parts."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

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

    def cache_key(self, size: tuple[int, int] | None, channels: int | None, convert: str | None = None) -> str:
        """Changes with any file's path, size or mtime, or with the decoding options."""
        options = [CACHE_FORMAT, str(self.root.resolve()), size, channels, *([convert] if convert else [])]
        digest = hashlib.sha256(json.dumps(options).encode())
        for file in self.files:
            stat = file.stat()
            digest.update(f"{file.relative_to(self.root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()
