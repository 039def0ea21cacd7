"""Tiny image folders written by the tests themselves: a few dozen small images in 2–3 classes."""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

CLASSES = ("cats", "dogs", "owls")


def write_image_folder(
    root: Path,
    per_class: int = 8,
    size: tuple[int, int] = (20, 24),
    mode: str = "RGB",
    classes: tuple[str, ...] = CLASSES,
    test_per_class: int = 0,
    seed: int = 0,
) -> Path:
    """``root/<class>/i.png`` (or ``root/train`` + ``root/test`` when ``test_per_class``), each class a
    different mean brightness plus noise, so that classes are learnable; height × width ``size``."""
    rng = np.random.default_rng(seed)
    parts = {"": per_class} if not test_per_class else {"train": per_class, "test": test_per_class}
    for part, count in parts.items():
        for label, name in enumerate(classes):
            folder = root / part / name
            folder.mkdir(parents=True, exist_ok=True)
            for index in range(count):
                pixels = np.clip(rng.normal(60 + 70 * label, 30, (*size, 3)), 0, 255).astype(np.uint8)
                image = Image.fromarray(pixels).convert(mode)
                image.save(folder / f"{index}.{'jpg' if index % 2 else 'png'}")
    return root


#: the copies ``add_copies`` files, original to copy: one beside itself in its class (as a file manager names a
#: copy), one in another class (a cat photo also filed under dogs)
COPIES = {"cats/3.jpg": "cats/3 (1).jpg", "cats/5.jpg": "dogs/cat too.jpg"}


def add_copies(root: Path) -> Path:
    """``COPIES`` of two of ``write_image_folder``'s images, byte for byte."""
    for original, copy in COPIES.items():
        shutil.copy(root / original, root / copy)
    return root


#: class folders as a user names them: spaces, mixed case, digits
MESSY_CLASSES = ("Boats", "kitties", "planes and jets", "trucks_2024")
#: (mode, (height, width), suffix) of the images of each class, in turn: every kind of mess of issue 42
MESSY_KINDS = (
    ("RGB", (32, 32), ".jpg"),
    ("RGB", (32, 32), ".jpeg"),
    ("RGB", (32, 32), ".PNG"),
    ("RGB", (28, 40), ".jpg"),
    ("RGB", (40, 28), ".png"),
    ("L", (32, 32), ".png"),
    ("RGBA", (32, 32), ".PNG"),
    ("RGB", (64, 64), ".jpg"),
    ("RGB", (28, 28), ".jpeg"),
    ("RGB", (24, 36), ".jpg"),
    ("RGB", (32, 32), ".jpg"),
    ("RGB", (32, 32), ".png"),
)
CORRUPT = "kitties/broken.jpg"
STRAY_FILES = (".DS_Store", "Boats/.DS_Store", "kitties/notes.txt")


def write_messy_folder(root: Path, seed: int = 0) -> Path:
    """A flat folder (no train/test) of small images with every kind of mess a user's photos have: sizes from
    24 to 64 pixels, non-square images, grey and RGBA images, .jpg/.jpeg/.PNG side by side, one corrupt file,
    a .DS_Store and a notes.txt, class folders with spaces and mixed case. Each class a different mean colour."""
    rng = np.random.default_rng(seed)
    for label, name in enumerate(MESSY_CLASSES):
        (root / name).mkdir(parents=True, exist_ok=True)
        for index, (mode, size, suffix) in enumerate(MESSY_KINDS):
            pixels = np.clip(rng.normal(50 + 50 * label, 30, (*size, 4)), 0, 255).astype(np.uint8)
            pixels[..., 3] = np.where(np.arange(size[1]) < size[1] // 2, 255, 0)  # half transparent
            Image.fromarray(pixels, "RGBA").convert(mode).save(root / name / f"{name[:3]} {index}{suffix}")
    (root / CORRUPT).write_bytes(b"\xff\xd8\xff\xe0 not a whole JPEG")
    for stray in STRAY_FILES:
        (root / stray).write_text("stray")
    return root


def write_table(root: Path, table: Path) -> Path:
    """A table of the images of the flat folder ``root`` (columns ``path``, relative to the table's folder, and
    ``species``, the class folder's name): CSV or Parquet by ``table``'s suffix."""
    rows = [
        (os.path.relpath(file, table.parent), file.parent.name)
        for file in sorted(root.glob("*/*"))
        if file.suffix in (".png", ".jpg")
    ]
    table.parent.mkdir(parents=True, exist_ok=True)
    if table.suffix == ".csv":
        with table.open("w", newline="") as out:
            csv.writer(out).writerows([("path", "species"), *rows])
    else:
        import pyarrow as pa
        import pyarrow.parquet as parquet

        parquet.write_table(pa.table({"path": [p for p, _ in rows], "species": [s for _, s in rows]}), table)
    return table


def write_saved_dataset(root: Path, target: Path) -> Path:
    """The images of ``root`` (``write_image_folder``'s layout) as a ``datasets`` dataset written by
    ``save_to_disk``: a ``DatasetDict`` of ``train`` and ``test`` where ``root`` has them, with an ``Image`` column
    and a ``ClassLabel``."""
    import datasets

    def split(folder: Path) -> datasets.Dataset:
        files = sorted(file for file in folder.glob("*/*") if file.suffix in (".png", ".jpg"))
        classes = sorted({file.parent.name for file in files})
        features = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=classes)})
        rows = {"image": [str(file) for file in files], "label": [classes.index(file.parent.name) for file in files]}
        return datasets.Dataset.from_dict(rows, features=features)

    if (root / "test").is_dir():
        datasets.DatasetDict({name: split(root / name) for name in ("train", "test")}).save_to_disk(str(target))
    else:
        split(root).save_to_disk(str(target))
    return target
