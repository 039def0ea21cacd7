"""Tiny image folders written by the tests themselves: a few dozen small images in 2–3 classes."""

from __future__ import annotations

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
