"""The ceiling a tuning pool sets on CAS: the ladder's CNN, under the CAS protocol (2,000 training images, the same
epochs and augmentation), trained on the pool's own real images (each repeated to fill the 2,000) and tested on the
same held-out images the pool's cells are scored on. A generator fitted to a release of n images per class teaches a
classifier what it learns from them at best, plus what a public base adds.

Tuning pools only (``tune-…``): on a ladder pool the number would be a statistic of protected records, outside any
ledger.

    python experiments/ladder/real_images_cas.py --pool tune-cifar10-n100 [--runs 3]
"""

from __future__ import annotations

import argparse
import sys

import torch

from zoo.metrics.classifiers import train_and_test
from zoo.metrics.reference import reference_images

LADDER = "data/ladder"
SAMPLES = 2000  # the ladder's CAS protocol: 2,000 training images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not args.pool.startswith("tune-"):
        sys.exit("tuning pools only (tune-…): on a ladder pool this would publish a statistic of protected records")
    folder = f"{LADDER}/{args.pool}"
    test = reference_images(folder)
    train = reference_images(folder, reference=f"{folder}/train")
    repeats = -(-SAMPLES // len(train.labels))
    images, labels = (part.repeat(repeats, *[1] * (part.dim() - 1))[:SAMPLES] for part in (train.images, train.labels))
    classes = len(train.classes)
    accuracies = [
        train_and_test("cnn", (images, labels), (test.images, test.labels), classes, seed=run)
        for run in range(args.runs)
    ]
    mean = torch.tensor(accuracies).mean().item()
    print(
        f"{args.pool}: the CNN trained on its {len(train.labels)} real images (repeated to {SAMPLES}) scores "
        f"{mean:.1f}% on {test.description} (runs: {', '.join(f'{a:.1f}' for a in accuracies)})"
    )


if __name__ == "__main__":
    main()
