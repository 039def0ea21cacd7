"""Where a model may be saved, checked before any work and without torch: ``dpzoo train`` and ``dpzoo fit`` answer
a bad output folder in seconds, and ``save_pretrained`` checks again before it writes.

A model is written only into a new or empty folder, or over a model (with ``overwrite``): never beside files
that are not a model's (a user's notes), which a later ``dpzoo push`` of the folder would carry along or which
``--overwrite`` would seem to allow replacing."""

from __future__ import annotations

import os
from pathlib import Path

from zoo.release.layout import CONFIG_NAME, HUB_FILES, CheckpointError, holds_model, load_config

#: how many foreign files a refusal names
NAMED = 3


class SaveTargetError(CheckpointError):
    """A folder ``save_pretrained`` must not or cannot write: it holds a model or other files, or is not writable."""


def check_save_target(directory: str | Path, overwrite: bool = False) -> Path:
    """``directory`` as a Path if ``save_pretrained`` may write a model there, else a SaveTargetError
    naming the reason. It writes nothing, so ``dpzoo fit`` calls it before training, not after."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise SaveTargetError(f"cannot save a model to {directory}: it is a file, not a folder")
    foreign = foreign_files(directory)
    if foreign:
        more = f" and {len(foreign) - NAMED} more" if len(foreign) > NAMED else ""
        raise SaveTargetError(
            f"cannot save a model to {directory}: it holds files that are not a model's ({', '.join(foreign[:NAMED])}"
            f"{more}), and a model is never written beside other files; choose a new or empty folder"
        )
    if not overwrite and holds_model(directory):
        raise SaveTargetError(
            f"{directory} already holds a model; pass {{overwrite}} to replace it", overwrite="overwrite=True"
        )
    for folder in _folders_written(directory):
        if not folder.is_dir():
            raise SaveTargetError(f"cannot save a model to {directory}: {folder} is a file, not a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise SaveTargetError(f"cannot save a model to {directory}: {folder} is not writable")
    return directory


def foreign_files(directory: Path) -> list[str]:
    """The names in ``directory`` (sorted) that are not a model's files. A model's are its Hub files and the figures
    its config.json records, where it holds a model; in a folder that holds none, a README.md is the user's."""
    if not directory.is_dir():
        return []
    own = set(HUB_FILES) if holds_model(directory) else set()
    if (directory / CONFIG_NAME).is_file():
        try:
            own |= set((load_config(directory).get("evaluation") or {}).get("figures", []))
        except CheckpointError:
            pass  # an unreadable config.json records no figures; its files are a model's all the same
    return sorted(entry.name for entry in os.scandir(directory) if entry.name not in own)


def _folders_written(directory: Path) -> list[Path]:
    """The existing folders a save writes in: the nearest existing ancestor of ``directory.parent``
    (missing parents are created there, then the staging folder beside ``directory``), and
    ``directory`` itself when it exists (the files are moved into it)."""
    parent = directory.parent
    nearest = next(folder for folder in (parent, *parent.parents) if folder.exists())
    return [directory, nearest] if directory.is_dir() else [nearest]
