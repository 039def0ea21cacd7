"""Writing a model folder's files all at once: each is written into a staging folder beside the model folder and
moved in only when every one was written, so that a failure halfway (a card that does not render, a full disk)
leaves the folder as it was. ``save_pretrained`` writes a model this way, ``zoo.metrics.records`` an evaluation
(config.json, the card and the figures)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def staged(directory: Path) -> Iterator[Path]:
    """A staging folder for the body to write in; once the body ends without an error its files are moved into
    ``directory`` (created if needed), each replacing the file of its name. The staging folder lies beside
    ``directory`` (a move within one file system is a rename) and is removed either way."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.staging-", dir=directory.parent))
    try:
        yield staging
        directory.mkdir(exist_ok=True)
        for file in staging.iterdir():
            os.replace(file, directory / file.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
