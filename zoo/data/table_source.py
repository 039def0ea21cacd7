"""A CSV or Parquet table of images and labels, one row per image: the image column holds paths relative to the
table's folder (or, in a Parquet export of a ``datasets`` dataset, ``{"bytes", "path"}`` structs), the label column
class names or numbers. Read into a ``FolderPart`` (``zoo.data.row_parts``); CSV with the standard library, Parquet
with pyarrow, imported when used. Torch-free."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zoo.data.folder_part import FolderPart
from zoo.data.row_parts import Columns, pick_columns, rows_part, written_images


def check_columns(path: Path, image_column: str | None, label_column: str | None) -> Columns:
    """The table's image and label columns, refused before any work where they are not among its columns."""
    return pick_columns(_column_names(path), image_column, label_column, str(path))


def table_parts(
    path: Path, classes: Sequence[str] | None, image_column: str | None, label_column: str | None
) -> tuple[FolderPart, None]:
    """The table as one part (no test split: ``dpzoo train`` keeps a held-out part, as for a folder without test/)."""
    columns = check_columns(path, image_column, label_column)
    images, labels = _read(path, columns)
    if images and isinstance(images[0], dict):  # a datasets Image column: the bytes, or the file where none
        stat = path.stat()
        stored = [image.get("bytes") for image in images]
        if all(stored):
            files = written_images(stored, f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}")
        else:
            files = [path.parent / image["path"] for image in images]
    else:
        files = [path.parent / str(image) for image in images]
    return rows_part(path.parent, files, labels, classes, path), None


def _column_names(path: Path) -> list[str]:
    if path.suffix.lower() == ".csv":
        with path.open(newline="") as table:
            return next(csv.reader(table), [])
    import pyarrow.parquet as parquet

    return list(parquet.read_schema(path).names)


def _read(path: Path, columns: Columns) -> tuple[list[Any], list[Any]]:
    if path.suffix.lower() == ".csv":
        with path.open(newline="") as table:
            rows = list(csv.DictReader(table))
        labels: list[Any] = [row[columns.label] for row in rows]
        if all(label.lstrip("-").isdigit() for label in labels):
            labels = [int(label) for label in labels]
        return [row[columns.image] for row in rows], labels
    import pyarrow.parquet as parquet

    table = parquet.read_table(path, columns=[columns.image, columns.label])
    return table.column(columns.image).to_pylist(), table.column(columns.label).to_pylist()
