"""The typical signal of a mean-embedding release, measured on public data for ``zoo.forecast``: the norm of one
class's mean of the released features (each record's term of norm ≤ 1), on 2,000 images drawn from the recipe's named
dataset's test split (public, and never a record a shipped model protects), the median over classes.

    python experiments/forecast/class_mean_norms.py configs/dp_merf_mnist_eps1.yaml configs/dp_merf_cifar10_eps1.yaml \
        configs/dp_mepf_mnist_eps1.yaml configs/dp_mepf_cifar10_eps10.yaml
"""

from __future__ import annotations

import importlib
import json
import sys

import torch
import yaml

from lightning_modules.nets.random_features import labelled_embedding
from zoo.data import load_images


def class_mean_norm(recipe_path: str, images: int = 2000) -> float:
    recipe = yaml.safe_load(open(recipe_path))
    arch = recipe["model"]["init_args"]
    dataset = recipe["data"]["init_args"]["dataset"]
    module, name = recipe["model"]["class_path"].rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    model = cls(**arch)
    x, y = load_images(dataset, train=False)
    chosen = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))[:images]  # the split is sorted
    x, y = x[chosen], y[chosen]
    weights = getattr(model.features, "part_weights", None)
    with torch.no_grad():
        features = torch.cat([model.features(chunk.double()) for chunk in x.split(500)])
        if weights is not None:
            features = features * weights
        means = labelled_embedding(features, y, 10) / torch.bincount(y, minlength=10).double()
    return float(means.norm(dim=0).median())


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(json.dumps({"recipe": path, "class_mean_norm": round(class_mean_norm(path), 3)}), flush=True)
