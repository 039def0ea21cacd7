"""The typical signal of each release shape (``zoo.release_shapes.SHAPES``): the median over classes of the norm of
one class's mean of the weighted features (each record's term of norm ≤ 1), and the shape's coordinate count, on
2,000 validation images of public data outside every ladder pool and every shipped model's records: CIFAR-10's
held-out validation images of classes 0-4 for colour, MNIST's validation images for grey.

    python experiments/forecast/shape_signals.py
"""

from __future__ import annotations

import json

import torch
import yaml

from lightning_modules import DPMEPF
from lightning_modules.nets.random_features import labelled_embedding
from zoo.data import load_images
from zoo.data.datamodule import DEFAULT_SPLIT_SEED, DEFAULT_VALIDATION_SIZE
from zoo.data.partition import train_validation_split
from zoo.release_shapes import SHAPES

RECIPES = {3: "configs/dp_mepf_cifar10_eps10.yaml", 1: "configs/dp_mepf_mnist_eps1.yaml"}
DATA = {3: ("cifar10", range(5)), 1: ("mnist", range(10))}
IMAGES = 2000


def validation_images(channels: int) -> tuple[torch.Tensor, torch.Tensor]:
    dataset, classes = DATA[channels]
    x, y = load_images(dataset, train=True)
    _, validation = train_validation_split(len(y), DEFAULT_VALIDATION_SIZE, DEFAULT_SPLIT_SEED)
    kept = validation[torch.isin(y[validation], torch.tensor(list(classes)))][:IMAGES]
    labels = y[kept]
    return x[kept], torch.unique(labels, return_inverse=True)[1]


def class_mean_norm(model: DPMEPF, x: torch.Tensor, y: torch.Tensor) -> float:
    classes = int(y.max()) + 1
    with torch.no_grad():
        weighted = torch.cat([model.features(chunk.double()) for chunk in x.split(250)]) * model.features.part_weights
    means = labelled_embedding(weighted, y, classes) / torch.bincount(y, minlength=classes).double()
    return float(means.norm(dim=0).median())


def main() -> None:
    for (method, channels), shapes in SHAPES.items():
        if method != "dp-mepf":
            continue  # DP-MERF's one shape: experiments/forecast/class_mean_norms.py
        x, y = validation_images(channels)
        arch = yaml.safe_load(open(RECIPES[channels]))["model"]["init_args"]
        for shape in shapes:
            model = DPMEPF(**{**arch, "image_shape": tuple(x.shape[1:]), **shape.changes})
            row = {"method": method, "channels": channels, "shape": shape.name, "features": model.features.features}
            print(json.dumps({**row, "signal": round(class_mean_norm(model, x, y), 3)}), flush=True)


if __name__ == "__main__":
    main()
