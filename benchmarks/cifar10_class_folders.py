"""Write the two image folders of the public-base demonstration (README, "Start from a public base"):
CIFAR-10 classes 0-4 (airplane ... deer) as the data declared public and classes 5-9 (dog ... truck)
as a user's private folder, each ``<out>/<name>/{train,test}/<class>`` linking to the class folders of
``DPZOO_DATA_DIR/cifar10-images``. The recipes read them from ``data/`` in the repository.

    python benchmarks/cifar10_class_folders.py --out data
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.data.images import FOLDER_TREES, TREE_CLASSES
from zoo.data.settings import DATA_DIR_ENV, source_data_dir

FOLDERS = {"cifar10-classes-0-4": range(0, 5), "cifar10-classes-5-9": range(5, 10)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("data"))
    args = parser.parse_args()
    source = source_data_dir()
    if source is None or not (source / FOLDER_TREES["cifar10"]).is_dir():
        raise SystemExit(f"set {DATA_DIR_ENV} to the folder holding {FOLDER_TREES['cifar10']}/")
    tree = (source / FOLDER_TREES["cifar10"]).resolve()
    for name, labels in FOLDERS.items():
        for part in ("train", "test"):
            for label in labels:
                link = args.out / name / part / TREE_CLASSES["cifar10"][label]
                link.parent.mkdir(parents=True, exist_ok=True)
                if not link.exists():
                    link.symlink_to(tree / part / TREE_CLASSES["cifar10"][label], target_is_directory=True)
        print(f"wrote {args.out / name}: classes {list(labels)}")


if __name__ == "__main__":
    main()
