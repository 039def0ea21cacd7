"""The privacy score of real images, for scale: the 10,000 held-out validation images (no shipped model
protects them) scored as if they were samples, against the test split, with dpzoo's LeNet.

    python benchmarks/privacy_score_reference.py --dataset mnist
"""

from __future__ import annotations

import argparse
import json

from zoo.data import load_images, train_validation_split
from zoo.metrics.privacy_score import privacy_score_lenet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    args = parser.parse_args()
    images, _ = load_images(args.dataset, train=True)
    _, validation = train_validation_split(len(images), 10_000, 0)
    score = privacy_score_lenet(images[validation], args.dataset)
    print(json.dumps({"dataset": args.dataset, "privacy_score_lenet": score["value"], "protocol": score["protocol"]}))


if __name__ == "__main__":
    main()
