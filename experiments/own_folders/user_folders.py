"""Write the two folders issue 55's user tried, rebuilt from public test images that no shipped model protects, as a
user's folders look: messy file names, JPEG and PNG mixed, a notes file and a hidden file among the images.

- ``grey-products``: 6 Fashion-MNIST classes (t-shirt, trouser, pullover, dress, sneaker, bag), 160 test images
  each, enlarged to 64×64 grey JPEGs, one folder per class and no ``test/`` (dpzoo keeps its own held-out part);
- ``colour-photos``: 7 CIFAR-10 classes, 135 training and 30 test images each from the official test split,
  enlarged to 48×48 colour JPEGs, in the user's own ``train/`` and ``test/``.

    DPZOO_DATA_DIR=... python experiments/own_folders/user_folders.py --out /tmp/user-folders
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image

from zoo.data.images import load_images

GREY = {0: "T-shirts", 1: "trousers", 2: "Pullovers", 3: "dresses", 7: "sneakers", 8: "bags"}
COLOUR = {0: "planes", 1: "Cars", 2: "birds", 3: "cats", 7: "horses", 8: "ships", 9: "trucks"}


def _write(image: Image.Image, path: Path, index: int) -> None:
    """Every fifth image a PNG, the others JPEGs named like a camera's."""
    path.mkdir(parents=True, exist_ok=True)
    if index % 5 == 0:
        image.save(path / f"scan {index:03d}.PNG")
    else:
        image.save(path / f"IMG_{1000 + index}.jpg", quality=90)


def write_folders(out: Path) -> None:
    """Both folders under ``out``, with a notes file and a hidden file in each."""
    for name, dataset, classes, size, test in (
        ("grey-products", "fashion_mnist", GREY, 64, 0),
        ("colour-photos", "cifar10", COLOUR, 48, 30),
    ):
        images, labels = load_images(dataset, train=False)
        root = out / name
        for label, class_name in classes.items():
            chosen = images[labels == label][: 135 + 25 * (test == 0) + test]
            for index, tensor in enumerate(chosen):
                array = tensor.mul(255).round().byte().permute(1, 2, 0).squeeze(-1).numpy()
                image = Image.fromarray(array).resize((size, size), Image.BICUBIC)
                part = root if test == 0 else root / ("test" if index >= len(chosen) - test else "train")
                _write(image, part / class_name, index)
        (root / "notes.txt").write_text("photos from the shop, 2026\n")
        (root / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    write_folders(parser.parse_args().out)
