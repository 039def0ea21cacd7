"""Calibrate the verdict's scale (``zoo.metrics.closeness``): the closeness of shipped models' samples, of
uniform noise and of fresh real images to a named dataset's official test split, which no shipped model protects.

    python experiments/closeness/calibrate.py --dataset cifar10 --models dp-merf-cifar10-eps10 dp-mepf-cifar10-eps10

Prints one line per row: the closeness over all classes and its range over classes.
"""

from __future__ import annotations

import argparse

import torch

import zoo
from zoo.data.images import load_images
from zoo.metrics.closeness import PER_CLASS, closeness, inception_pool_features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--models", nargs="*", default=[])
    parser.add_argument("--per-class", type=int, default=50, help="samples per class")
    parser.add_argument("--models-only", action="store_true", help="leave out the noise and fresh-image rows")
    args = parser.parse_args()
    images, labels = load_images(args.dataset, train=False)
    classes = [str(c) for c in range(int(labels.max()) + 1)]
    generator = torch.Generator().manual_seed(1)
    keep = torch.cat([torch.nonzero(labels == c).flatten()[:PER_CLASS] for c in range(len(classes))])
    held_out, held_labels = images[keep], labels[keep]
    pool_features = inception_pool_features()
    cache: dict[int, torch.Tensor] = {}

    def features(batch: torch.Tensor) -> torch.Tensor:  # the held-out half A's, once for every row
        key = hash(batch.numpy().tobytes())
        if key not in cache:
            cache[key] = pool_features(batch)
        return cache[key]

    sample_labels = torch.arange(len(classes)).repeat(args.per_class)
    fresh = torch.cat([torch.nonzero(labels == c).flatten()[-args.per_class :] for c in range(len(classes))])
    rows = (
        {}
        if args.models_only
        else {
            "uniform noise": torch.rand(len(sample_labels), *images.shape[1:], generator=generator),
            "fresh test images": images[fresh],
        }
    )
    fresh_labels = labels[fresh]
    for model_id in args.models:
        rows[model_id] = zoo.load(model_id).sample(len(sample_labels), labels=sample_labels, seed=2)
    for name, drawn in rows.items():
        drawn_labels = fresh_labels if name == "fresh test images" else sample_labels
        result = closeness(
            drawn, drawn_labels, held_out, held_labels, classes, features, torch.Generator().manual_seed(3)
        )
        spread = f"{min(result.per_class.values()):.2f}-{max(result.per_class.values()):.2f}"
        print(f"{name:>28}: closeness {result.value:.3f} (classes {spread}; {result.held_out} held out)", flush=True)


if __name__ == "__main__":
    main()
