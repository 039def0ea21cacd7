"""Write the two image folders of the public-base demonstration (README, "Start from a public base"):
CIFAR-10 classes 0-4 (airplane ... deer) as the data declared public and classes 5-9 (dog ... truck)
as a user's private folder, each ``<out>/<name>/{train,test}/<class>`` linking to the images of
``DPZOO_DATA_DIR/cifar10-images``. The recipes read them from ``data/`` in the repository.

``train/`` holds the CIFAR-10 training images minus the 10,000 held-out validation images (the
seed-0 split every CIFAR-10 recipe's settings were chosen on, ``VALIDATION``), one link per image:
so no shipped model protects, or was pretrained on, an image that chose settings.
``test/`` links to the official test split's class folders.

    python benchmarks/cifar10_class_folders.py --out data [--overwrite]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from zoo.data.datamodule import DEFAULT_SPLIT_SEED, DEFAULT_VALIDATION_SIZE
from zoo.data.folders import folder_parts
from zoo.data.partition import train_validation_split
from zoo.data.settings import DATA_DIR_ENV, source_data_dir
from zoo.data.sources import named_or_refused

FOLDERS = {"cifar10-classes-0-4": range(0, 5), "cifar10-classes-5-9": range(5, 10)}
#: the held-out validation split of the CIFAR-10 recipes (zoo.data.ImageDataModule's default)
VALIDATION = dict(validation_size=DEFAULT_VALIDATION_SIZE, seed=DEFAULT_SPLIT_SEED)


def training_files_outside_validation(tree: Path) -> list[Path]:
    """The training images, in the order ``load_images("cifar10", train=True)`` reads them, minus the
    validation split's."""
    train = folder_parts(tree)[0]
    kept, _ = train_validation_split(len(train.files), **VALIDATION)
    return [train.files[i] for i in kept.tolist()]


def write_folder(out: Path, tree: Path, labels: range, training_files: list[Path]) -> int:
    """``out/train/<class>/<image>`` links for the kept training images of ``labels``, ``out/test/<class>``
    links to the test split's class folders; returns the number of training images."""
    classes = {named_or_refused("cifar10").classes[label] for label in labels}
    kept = [file for file in training_files if file.parent.name in classes]
    for file in kept:
        link = out / "train" / file.parent.name / file.name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(file)
    for name in sorted(classes):
        link = out / "test" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(tree / "test" / name, target_is_directory=True)
    return len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("data"))
    parser.add_argument("--overwrite", action="store_true", help="replace folders written before")
    args = parser.parse_args()
    source = source_data_dir()
    if source is None or not (source / named_or_refused("cifar10").settings["tree"]).is_dir():
        raise SystemExit(f"set {DATA_DIR_ENV} to the folder holding {named_or_refused('cifar10').settings['tree']}/")
    existing = [args.out / name for name in FOLDERS if (args.out / name).exists()]
    if existing and not args.overwrite:
        raise SystemExit(f"{', '.join(map(str, existing))} exist: pass --overwrite to write them again")
    tree = (source / named_or_refused("cifar10").settings["tree"]).resolve()
    training_files = training_files_outside_validation(tree)
    for name, labels in FOLDERS.items():
        shutil.rmtree(args.out / name, ignore_errors=True)
        count = write_folder(args.out / name, tree, labels, training_files)
        print(f"wrote {args.out / name}: classes {list(labels)}, {count:,} training images outside validation")


if __name__ == "__main__":
    main()
