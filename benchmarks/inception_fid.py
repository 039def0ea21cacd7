"""Inception FID floors of real data and the extractor's speed, offline (the ``fid`` extra's FID Inception
through torch-fidelity's ``inception-v3-compat``):

    python benchmarks/inception_fid.py [--n 10000]

prints the FID of n of the held-out validation images (the recipes' seed-0 split of the training
images, which no shipped model protects) against the first n test images, for CIFAR-10 and MNIST, and
the seconds per 1,000 images of the extractor on this machine. Never random training images: most of
them are records that shipped models protect, and a number computed from them would be published
without DP. FID is biased upwards at small n: compare numbers of the same n only.
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from zoo.data import load_images
from zoo.data.datamodule import DEFAULT_SPLIT_SEED, DEFAULT_VALIDATION_SIZE
from zoo.data.partition import train_validation_split
from zoo.metrics import fidelity_metrics


def floor(dataset: str, n: int) -> None:
    images, _ = load_images(dataset, train=True)
    _, validation = train_validation_split(len(images), DEFAULT_VALIDATION_SIZE, DEFAULT_SPLIT_SEED)
    if n > len(validation):
        raise SystemExit(f"--n is at most the {len(validation):,} validation images")
    held_out = images[validation[torch.randperm(len(validation), generator=torch.Generator().manual_seed(0))[:n]]]
    test = load_images(dataset, train=False)[0]
    if n < len(test):  # a random part: the split is sorted by class. Whole, it is in its own order, as
        test = test[torch.randperm(len(test), generator=torch.Generator().manual_seed(1))[:n]]  # evaluate caches it
    start = time.perf_counter()
    result = fidelity_metrics(held_out, test, ("fid",), dataset)["fid"]
    seconds = time.perf_counter() - start
    print(
        f"{dataset}: FID of {n:,} validation images against {n:,} test images = {result['value']:.2f} "
        f"({result['protocol']['feature_extractor']}, weights: {result['protocol']['weights']}); "
        f"{seconds / (2 * n) * 1000:.0f} s per 1,000 images"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="images on each side")
    parser.add_argument("--datasets", default="cifar10,mnist")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print(f"torch threads: {torch.get_num_threads()}")
    for dataset in args.datasets.split(","):
        floor(dataset, args.n)


if __name__ == "__main__":
    main()
