"""Inception FID floors of real data and the extractor's speed, offline (the ``fid`` extra's FID Inception
through torch-fidelity's ``inception-v3-compat``):

    python benchmarks/inception_fid.py [--n 10000]

prints the FID of n random CIFAR-10 training images against the first n test images, of the first n
MNIST test images against n random training images, and the seconds per 1,000 images of the extractor
on this machine. FID is biased upwards at small n: compare numbers of the same n only.
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from zoo.data import load_images
from zoo.metrics import fidelity_metrics


def floor(dataset: str, first: tuple[str, bool], second: tuple[str, bool], n: int) -> None:
    generator = torch.Generator().manual_seed(0)
    sets = []
    for _, train in (first, second):
        images, _ = load_images(dataset, train=train)
        # the test split in its own order, as `dpzoo evaluate` takes it, so both share the cached features
        sets.append(images[torch.randperm(len(images), generator=generator)[:n]] if train else images[:n])
    start = time.perf_counter()
    result = fidelity_metrics(sets[0], sets[1], ("fid",), dataset)["fid"]
    seconds = time.perf_counter() - start
    print(
        f"{dataset}: FID of {n:,} {first[0]} images against {n:,} {second[0]} images = {result['value']:.2f} "
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
    pairs = {"cifar10": (("training", True), ("test", False)), "mnist": (("test", False), ("training", True))}
    for dataset in args.datasets.split(","):
        floor(dataset, *pairs[dataset], args.n)


if __name__ == "__main__":
    main()
