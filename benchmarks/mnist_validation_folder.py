"""Write the public data of the grey DP-MEPF base (configs/dp_mepf_mnist_public_base.yaml): MNIST's 10,000 held-out
validation images (the seed-0 split every MNIST recipe's settings were chosen on, which no shipped model protects)
as ``<out>/mnist-validation/<digit>/<index>.png``.

    python benchmarks/mnist_validation_folder.py --out data [--overwrite]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from PIL import Image

from zoo.data import load_images
from zoo.data.datamodule import DEFAULT_SPLIT_SEED, DEFAULT_VALIDATION_SIZE
from zoo.data.partition import train_validation_split

NAME = "mnist-validation"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("data"))
    parser.add_argument("--overwrite", action="store_true", help="replace the folder written before")
    args = parser.parse_args()
    folder = args.out / NAME
    if folder.exists() and not args.overwrite:
        raise SystemExit(f"{folder} exists: pass --overwrite to write it again")
    shutil.rmtree(folder, ignore_errors=True)
    images, labels = load_images("mnist", train=True)
    _, validation = train_validation_split(len(labels), DEFAULT_VALIDATION_SIZE, DEFAULT_SPLIT_SEED)
    for index in validation.tolist():
        path = folder / str(int(labels[index])) / f"{index:05d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray((images[index, 0] * 255).round().byte().numpy(), mode="L").save(path)
    print(f"wrote {folder}: {len(validation):,} MNIST validation images")


if __name__ == "__main__":
    main()
