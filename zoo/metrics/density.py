"""Density metrics for models with ``log_prob``: likelihood and one-class-vs-rest OOD detection."""

from __future__ import annotations

import statistics
from typing import Any

import torch
from sklearn.metrics import roc_auc_score

from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.reference import ReferenceImages


def _log_prob(model: DPGenerativeModel, images: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat(
            [
                model.log_prob(x) if labels is None else model.log_prob(x, y)
                for x, y in zip(images.split(1000), (labels if labels is not None else images).split(1000), strict=True)
            ]
        )


def check_density(metric: str, model: DPGenerativeModel, label: int | None) -> None:
    """Refuse, before any data is read, a density metric the model cannot give."""
    conditional = model.num_classes is not None and model.has_density
    if metric == "ood_auroc" and (label is not None or not conditional):
        raise UserError(f"OOD AUROC needs a class-conditional density (log_prob(x, labels)); {model.method} is not one")
    if not model.has_density:
        raise UserError(f"{model.method} has no log_prob")


def ood_auroc(model: DPGenerativeModel, reference: ReferenceImages, label: int | None = None) -> dict[str, Any]:
    """DP-LFlow §4.4: the whole evaluation split scored by its log-likelihood under class k
    (``log_prob(x, labels=k)``); class-k images are in-distribution, the rest out-of-distribution.
    AUROC per class and their mean; needs a class-conditional density."""
    check_density("ood_auroc", model, label)
    images, labels = reference.images, reference.labels
    per_class = {}
    for label in range(model.num_classes):
        scores = _log_prob(model, images, torch.full_like(labels, label))
        per_class[label] = float(roc_auc_score((labels == label).numpy(), scores.numpy()))
    return {
        "value": statistics.fmean(per_class.values()),
        "per_class": per_class,
        "protocol": {"score": "log-likelihood of each class's model", "data": reference.description},
    }


def heldout_log_likelihood(
    model: DPGenerativeModel, reference: ReferenceImages, label: int | None = None
) -> dict[str, Any]:
    """Mean log-likelihood of the real evaluation images (or their class ``label``) under the model,
    in nats per modelled dimension."""
    check_density("log_likelihood", model, label)
    reference = reference.of_class(label)
    images, labels = reference.images, reference.labels
    conditional = model.num_classes is not None
    scores = _log_prob(model, images, labels if conditional else None)
    dims = int(model.log_prob_dims)
    return {
        "value": float(scores.mean()) / dims,
        "unit": f"nats per dimension ({model.log_prob_space}, {dims} dims)",
        "protocol": {
            "data": reference.description,
            "labels": "true labels" if conditional else None,
        },
    }
