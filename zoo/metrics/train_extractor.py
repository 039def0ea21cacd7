"""Train the LeNet feature extractor on the held-out validation images and save it.

python -m zoo.metrics.train_extractor --dataset mnist

The extractor ships with dpzoo, so it is a release: it must never see the images a private
model protects. It learns from the 10,000 training images that ``ImageDataModule`` holds
out for validation (seed 0), which no shipped model trains on, and is tested on the test split.
"""

from __future__ import annotations

import argparse
import json

import torch
from safetensors.torch import save_file
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm

from zoo.data import load_images, train_validation_split
from zoo.data.datamodule import DEFAULT_SPLIT_SEED, DEFAULT_VALIDATION_SIZE
from zoo.metrics.extractors import LeNet, extractor_weights
from zoo.metrics.image_computations import lenet_sets


def held_out_validation_images(dataset: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The training images ``ImageDataModule`` holds out by default (outside every protected set)."""
    images, labels = load_images(dataset, train=True)
    _, validation = train_validation_split(len(labels), DEFAULT_VALIDATION_SIZE, DEFAULT_SPLIT_SEED)
    return images[validation], labels[validation]


def train_lenet(dataset: str, epochs: int = 15, seed: int = 0) -> tuple[LeNet, float]:
    torch.manual_seed(seed)
    train, test = held_out_validation_images(dataset), load_images(dataset, train=False)
    network = LeNet()
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-3)
    for _ in tqdm(range(epochs), desc=f"LeNet on {dataset}"):
        for x, y in DataLoader(TensorDataset(*train), batch_size=128, shuffle=True):
            optimizer.zero_grad()
            nn.functional.cross_entropy(network(x), y).backward()
            optimizer.step()
    network.eval()
    with torch.no_grad():
        accuracy = (network(test[0]).argmax(1) == test[1]).float().mean().item() * 100
    return network, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist", choices=lenet_sets())
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args()
    network, accuracy = train_lenet(args.dataset, args.epochs)
    path = extractor_weights(args.dataset)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in network.state_dict().items()}, str(path))
    record = {
        "dataset": args.dataset,
        "epochs": args.epochs,
        "test_accuracy_percent": round(accuracy, 2),
        "trained_on": f"the {DEFAULT_VALIDATION_SIZE:,} training images held out for validation (split seed "
        f"{DEFAULT_SPLIT_SEED}); no shipped model trains on them, so the extractor reveals nothing they protect",
        "command": f"python -m zoo.metrics.train_extractor --dataset {args.dataset} --epochs {args.epochs}",
    }
    path.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
