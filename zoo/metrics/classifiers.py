"""The CAS classifiers of DP-LFlow appendix E.4, and a ResNet (timm, from scratch)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm

from zoo.errors import UserError

CLASSIFIERS = ("lr", "mlp", "cnn", "resnet")


@dataclass(frozen=True)
class ClassifierSettings:
    """How a CAS classifier is trained unless told otherwise, and where those settings come from."""

    epochs: int | None  # None: not trained by epochs (sklearn's logistic regression)
    augments_colour: bool  # flip and crop batches of 3-channel images (natural photos), never digits
    chosen_by: str


SETTINGS = {
    "lr": ClassifierSettings(None, False, "DP-LFlow appendix E.4 (sklearn defaults)"),
    "mlp": ClassifierSettings(10, False, "DP-LFlow appendix E.4"),
    "cnn": ClassifierSettings(10, False, "DP-LFlow appendix E.4"),
    "resnet": ClassifierSettings(
        20,
        True,
        "chosen on CIFAR-10's held-out validation images, never the test split "
        "(experiments/cas_resnet/cas_resnet_settings.py)",
    ),
}


def training_settings(
    name: str, image_shape: tuple[int, ...], epochs: int | None = None, augment: bool | None = None
) -> tuple[int | None, bool]:
    """(epochs, augment) of classifier ``name`` on images of ``image_shape``: those given, else its ``SETTINGS``
    (flip and crop only for 3-channel images). The logistic regression has no epochs and no augmentation."""
    if name not in SETTINGS:
        raise UserError(f"unknown classifier {name!r}; known: {CLASSIFIERS}")
    if name == "lr":
        return None, False
    if epochs is not None and epochs < 1:
        raise UserError(f"epochs must be a positive integer, got {epochs!r}")
    settings = SETTINGS[name]
    return (
        settings.epochs if epochs is None else epochs,
        settings.augments_colour and image_shape[0] == 3 if augment is None else augment,
    )


def build_network(name: str, image_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    channels, height, width = image_shape
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(), nn.Linear(channels * height * width, 100), nn.ReLU(), nn.Linear(100, num_classes)
        )
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(channels, 32, 3, stride=2, padding=1),
            nn.Dropout(0.5),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1),
            nn.Dropout(0.5),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64 * ((height + 3) // 4) * ((width + 3) // 4), num_classes),
        )
    if name == "resnet":
        import timm

        return timm.create_model("resnet18", pretrained=False, num_classes=num_classes, in_chans=channels)
    raise UserError(f"unknown classifier {name!r}; known: {CLASSIFIERS}")


def train_and_test(
    name: str,
    train: tuple[Tensor, Tensor],
    test: tuple[Tensor, Tensor],
    num_classes: int,
    seed: int,
    epochs: int | None = None,
    batch_size: int = 128,
    augment: bool | None = None,
    device: str | torch.device = "cpu",
) -> float:
    """Test accuracy (%) of classifier ``name`` trained on ``train`` for a fixed number of
    epochs: no early stopping, so the test split never steers training. ``augment``: each batch flipped
    and cropped at random (``flip_and_crop``), for natural colour images. ``epochs`` and ``augment`` default
    to the classifier's ``SETTINGS``. The network trains and predicts on ``device``; it is initialised, and
    its batches shuffled and augmented, on the CPU, so that a seed draws the same on every device (the
    logistic regression is sklearn's, on the CPU)."""
    epochs, augment = training_settings(name, tuple(train[0].shape[1:]), epochs, augment)
    if name == "lr":
        return _logistic_regression(train, test, seed)
    torch.manual_seed(seed)
    network = build_network(name, tuple(train[0].shape[1:]), num_classes).to(device)
    optimizer = torch.optim.Adam(network.parameters())
    fit(network, optimizer, train, epochs, batch_size, f"CAS {name} (seed {seed})", augment=augment)
    return accuracy_on(network, test)


def fit(
    network: nn.Module,
    optimizer: torch.optim.Optimizer,
    train: tuple[Tensor, Tensor],
    epochs: int,
    batch_size: int,
    description: str,
    schedule: torch.optim.lr_scheduler.LRScheduler | None = None,
    augment: bool = False,
) -> None:
    """Cross-entropy training for a fixed number of epochs (``schedule`` steps after each epoch; ``augment``:
    ``flip_and_crop`` on every batch), each batch moved to the network's device after its augmentation."""
    device = _device_of(network)
    loader = DataLoader(TensorDataset(*train), batch_size=batch_size, shuffle=True)
    network.train()
    for _ in tqdm(range(epochs), desc=description, leave=False):
        for x, y in loader:
            optimizer.zero_grad()
            inputs = (flip_and_crop(x) if augment else x).to(device)
            nn.functional.cross_entropy(network(inputs), y.to(device)).backward()
            optimizer.step()
        if schedule is not None:
            schedule.step()


def flip_and_crop(images: Tensor, pad: int = 4) -> Tensor:
    """The standard augmentation of natural images (CIFAR-10's): each image flipped left-right with probability
    1/2, then cropped back to its size from its zero-padded copy at a random offset of up to ``pad`` pixels.
    Drawn from torch's global generator, which ``train_and_test`` seeds."""
    n, _, height, width = images.shape
    flip = torch.rand(n) < 0.5
    images = torch.where(flip[:, None, None, None], images.flip(-1), images)
    padded = nn.functional.pad(images, (pad, pad, pad, pad))
    rows = torch.randint(0, 2 * pad + 1, (n,))
    columns = torch.randint(0, 2 * pad + 1, (n,))
    return torch.stack([p[:, r : r + height, c : c + width] for p, r, c in zip(padded, rows, columns, strict=True)])


#: the unit of a classifier's accuracy on the evaluation images' labels (``dpzoo evaluate`` prints the baseline of
#: guessing beside each result in it)
ACCURACY_UNIT = "% test accuracy"


def accuracy_over_runs(accuracies: list[float]) -> dict[str, Any]:
    """Mean ± std of the test accuracies (%) of independent training runs, as an evaluation result."""
    return {
        "value": statistics.fmean(accuracies),
        "std": statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0,
        "runs": accuracies,
        "unit": ACCURACY_UNIT,
    }


def accuracy_on(network: nn.Module, test: tuple[Tensor, Tensor]) -> float:
    """Accuracy (%) of ``network`` on ``test``, in evaluation mode, on the network's device."""
    device = _device_of(network)
    network.eval()
    with torch.no_grad():
        correct = sum(
            (network(x.to(device)).argmax(1).cpu() == y).sum().item()
            for x, y in DataLoader(TensorDataset(*test), batch_size=1000)
        )
    return 100.0 * correct / len(test[1])


def _device_of(network: nn.Module) -> torch.device:
    return next(network.parameters()).device


def _logistic_regression(train: tuple[Tensor, Tensor], test: tuple[Tensor, Tensor], seed: int) -> float:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)  # sklearn defaults, as in the paper
        model = LogisticRegression(random_state=seed).fit(_flat(train[0]), train[1].numpy())
    return 100.0 * float(np.mean(model.predict(_flat(test[0])) == test[1].numpy()))


def _flat(x: Tensor) -> np.ndarray:
    return x.flatten(1).numpy()
