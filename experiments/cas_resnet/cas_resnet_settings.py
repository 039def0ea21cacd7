"""Choose the settings of ``cas_resnet`` for 32×32 colour images on real validation images only: the
10,000 CIFAR-10 validation images that every CIFAR-10 recipe holds out (no shipped model protects them),
never the test split. One run prints the accuracy of timm's ResNet-18 (from scratch, Adam, batch 128)
trained on one half of them and tested on the other half, for one setting.

``--reference`` instead trains on all 10,000 validation images and tests on the test split: the accuracy
that real data of the size of a card's synthetic set reaches, printed beside a card's ``cas_resnet``.

    python experiments/cas_resnet/cas_resnet_settings.py --epochs 10 --augment
    python experiments/cas_resnet/cas_resnet_settings.py --epochs 10 --augment --reference
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the protocol the probes share

from validation_halves import validation_halves  # noqa: E402

from zoo.data import load_images  # noqa: E402
from zoo.metrics.classifiers import train_and_test  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--augment", action="store_true", help="flip and crop every batch (flip_and_crop)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference", action="store_true", help="all 10,000 validation images, tested on test")
    args = parser.parse_args()
    first, second = validation_halves("cifar10")
    if args.reference:
        train = (torch.cat([first[0], second[0]]), torch.cat([first[1], second[1]]))
        test, tested_on = load_images("cifar10", train=False), "test split (10,000)"
    else:
        train, test, tested_on = first, second, "validation half (5,000)"
    start = time.perf_counter()
    accuracy = train_and_test("resnet", train, test, 10, args.seed, epochs=args.epochs, augment=args.augment)
    print(
        json.dumps(
            {
                "epochs": args.epochs,
                "augment": args.augment,
                "seed": args.seed,
                "train": f"validation images ({len(train[1])})",
                "test": tested_on,
                "accuracy": round(accuracy, 2),
                "seconds": round(time.perf_counter() - start),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
