"""A Hugging Face ``datasets`` dataset written by ``save_to_disk`` (a ``Dataset``, or a ``DatasetDict`` whose
``train`` split trains and whose ``test`` split, where there is one, is held out), read with ``load_from_disk``,
never from the Hub. The image column is the first ``Image`` feature and the label column the first ``ClassLabel``
(whose names are the classes), unless given. Each image's bytes are written once to the owner-only cache and read
as a folder's files are (``zoo.data.row_parts``).

Recognised and its columns checked from the JSON that ``save_to_disk`` writes beside the data, so that a wrong
column is refused before ``datasets`` (or torch) is imported."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zoo.data.folder_part import FolderPart
from zoo.data.row_parts import Columns, pick_columns, rows_part, written_images
from zoo.errors import UserError

DICT_FILE, INFO_FILE, STATE_FILE = "dataset_dict.json", "dataset_info.json", "state.json"
TRAIN, TEST = "train", "test"


def recognises(path: Path) -> bool:
    """A folder ``save_to_disk`` wrote: a ``DatasetDict``'s or a ``Dataset``'s."""
    return path.is_dir() and (
        (path / DICT_FILE).is_file() or ((path / INFO_FILE).is_file() and (path / STATE_FILE).is_file())
    )


def check_columns(path: Path, image_column: str | None, label_column: str | None) -> Columns:
    """The training split's image and label columns (from its features), refused before any work where the data
    has no such column, or no training split."""
    features = _split_features(path)[TRAIN]
    typed = {
        kind: next((name for name, f in features.items() if f.get("_type") == kind), None)
        for kind in ("Image", "ClassLabel")
    }
    return pick_columns(list(features), image_column, label_column, str(path), typed["Image"], typed["ClassLabel"])


def datasets_parts(
    path: Path, classes: Sequence[str] | None, image_column: str | None, label_column: str | None
) -> tuple[FolderPart, FolderPart | None]:
    """The training split, and the test split where the dataset has one, with the training split's classes."""
    columns = check_columns(path, image_column, label_column)
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # load_from_disk reads local files; nothing may reach the Hub
    import datasets

    loaded = datasets.load_from_disk(str(path))
    splits = dict(loaded) if isinstance(loaded, datasets.DatasetDict) else {TRAIN: loaded}
    train = _part(path, TRAIN, splits[TRAIN], columns, classes)
    test = splits.get(TEST)
    return train, None if test is None else _part(path, TEST, test, columns, train.classes)


def _part(path: Path, split: str, dataset: Any, columns: Columns, classes: Sequence[str] | None) -> FolderPart:
    import datasets

    feature = dataset.features[columns.label]
    names = feature.names if isinstance(feature, datasets.ClassLabel) else None
    images = dataset.cast_column(columns.image, datasets.Image(decode=False))[columns.image]
    stored = [image["bytes"] or Path(image["path"]).read_bytes() for image in images]
    files = written_images(stored, f"{path.resolve()}\0{split}\0{dataset._fingerprint}")
    root = files[0].parent if files else path
    return rows_part(root, files, dataset[columns.label], classes, path, names)


def _split_features(path: Path) -> dict[str, dict[str, Any]]:
    if (path / DICT_FILE).is_file():
        splits = json.loads((path / DICT_FILE).read_text())["splits"]
        if TRAIN not in splits:
            raise UserError(f"{path} holds the splits {', '.join(splits)}: dpzoo trains on a split named {TRAIN!r}")
        return {split: _features(path / split) for split in splits}
    return {TRAIN: _features(path)}


def _features(folder: Path) -> dict[str, Any]:
    return json.loads((folder / INFO_FILE).read_text()).get("features") or {}
