"""The Private Set Generation paper's protocol: its ConvNet (width 128, depth 3, instance norm) trained
on the released set itself, tested on the real test split. Only a model that releases a set
(``released_set()``) has it; the zoo's CAS protocol (``zoo.metrics.cas``) applies to every model."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.classifiers import accuracy_on, accuracy_over_runs, fit
from zoo.metrics.reference import ReferenceImages, reference_images

#: the official evaluation: SGD, momentum 0.9, weight decay 5e-4, batch 256, lr × 0.1 after half the epochs
EPOCHS, LEARNING_RATE, BATCH = 300, 0.01, 256


def set_accuracy(
    model: DPGenerativeModel,
    dataset: str | ReferenceImages,
    runs: int = 5,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> dict[str, Any]:
    """Mean ± std test accuracy (%) of the paper's ConvNet trained on ``model.released_set()``, on ``device``."""
    if not model.releases_a_set:
        raise UserError(
            f"set_accuracy trains on a released set, and {model.method} releases a generator, not a set; "
            "use the cas metrics"
        )
    images, labels = model.released_set()
    reference = dataset if isinstance(dataset, ReferenceImages) else reference_images(dataset)
    test = (reference.images, reference.labels)
    accuracies = [
        convnet_accuracy((images.cpu(), labels.cpu()), test, model.num_classes, seed + run, device=device)
        for run in range(runs)
    ]
    return {
        **accuracy_over_runs(accuracies),
        "protocol": {
            "classifier": "Private Set Generation ConvNet (width 128, depth 3, instance norm)",
            "train": f"the released set ({len(labels)} images), {EPOCHS} epochs of SGD, no augmentation",
            "test": reference.description,
        },
    }


def convnet_accuracy(
    train: tuple[Tensor, Tensor],
    test: tuple[Tensor, Tensor],
    num_classes: int,
    seed: int,
    epochs: int = EPOCHS,
    device: str | torch.device = "cpu",
) -> float:
    """Test accuracy (%) of the paper's ConvNet after the official training schedule on ``train``, trained and
    tested on ``device`` (initialised on the CPU, as ``zoo.metrics.classifiers.train_and_test`` says why)."""
    from lightning_modules.nets.convnet import ConvNet  # lightning_modules imports zoo

    torch.manual_seed(seed)
    network = ConvNet(tuple(train[0].shape[1:]), num_classes).to(device)
    optimizer = torch.optim.SGD(network.parameters(), lr=LEARNING_RATE, momentum=0.9, weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, [epochs // 2 + 1], gamma=0.1)
    fit(network, optimizer, train, epochs, BATCH, f"set ConvNet (seed {seed})", schedule)
    return accuracy_on(network, test)
