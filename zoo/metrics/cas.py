"""CAS: train a classifier on labelled synthetic samples, test it on the real test split."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.cas_references import real_data_reference
from zoo.metrics.classifiers import SETTINGS, accuracy_over_runs, train_and_test, training_settings
from zoo.metrics.reference import ReferenceImages, reference_images


def classifier_accuracy_on_synthetic(
    model: DPGenerativeModel,
    dataset: str | ReferenceImages,
    classifiers: tuple[str, ...] = ("lr", "mlp", "cnn"),
    num_samples: int = 10_000,
    runs: int = 5,
    epochs: int | None = None,
    seed: int = 0,
    samples: Tensor | None = None,
    device: str | torch.device = "cpu",
) -> dict[str, dict[str, Any]]:
    """Mean ± std test accuracy (%) per classifier over ``runs`` training seeds.

    One synthetic set of ``num_samples`` images with balanced labels (0, 1, ..., K-1, 0, ...)
    is drawn with ``seed`` (or passed as ``samples``, drawn with those labels); each run
    retrains the classifier from a new seed. ``epochs`` (default: each classifier's ``SETTINGS``) applies to
    every classifier but the logistic regression. The protocol counts the distinct images among them:
    a released set (Private Set, P3DM) repeats its few images to fill ``num_samples``; it names the
    augmentation, and a real-data reference where one was measured under the same settings. The classifiers
    train and predict on ``device`` (``zoo.metrics.classifiers.train_and_test``).
    """
    if model.num_classes is None:
        raise UserError(f"CAS needs labelled samples, but {model.method} is unconditional")
    labels = torch.arange(num_samples) % model.num_classes
    images = model.sample(num_samples, labels=labels, seed=seed) if samples is None else samples
    reference = dataset if isinstance(dataset, ReferenceImages) else reference_images(dataset)
    test = (reference.images, reference.labels)
    distinct = distinct_images(images)
    results = {}
    for name in classifiers:
        trained_for, augment = training_settings(name, tuple(images.shape[1:]), epochs)
        accuracies = [
            train_and_test(
                name,
                (images, labels),
                test,
                model.num_classes,
                seed=seed + run,
                epochs=trained_for,
                augment=augment,
                device=device,
            )
            for run in range(runs)
        ]
        real = real_data_reference(name, reference.description, trained_for, augment)
        results[f"cas_{name}"] = {
            **accuracy_over_runs(accuracies),
            **({"real_data_accuracy": real.accuracy} if real else {}),
            "protocol": {
                "classifier": name if name != "resnet" else "timm resnet18 from scratch",
                "train": f"{num_samples} synthetic samples ({distinct} distinct images), balanced labels, seed {seed}",
                "test": reference.description,
                "epochs": trained_for,
                "optimizer": "sklearn LogisticRegression defaults" if name == "lr" else "Adam defaults, batch 128",
                **({"augmentation": "flip left-right, crop from 4-pixel zero padding"} if augment else {}),
                "settings": SETTINGS[name].chosen_by if epochs is None or name == "lr" else f"{epochs} epochs, given",
                **({"real_data_reference": real.description()} if real else {}),
            },
        }
    return results


def distinct_images(images: Tensor) -> int:
    """How many different images a set holds (exact pixel equality)."""
    return len(torch.unique(images.flatten(1), dim=0))
