"""Membership-inference audits: an empirical *lower bound* on leakage, never a guarantee.

- nearest neighbour (GAN-Leaks style, model-agnostic): a candidate whose closest synthetic
  sample is nearer is scored as more likely a member;
- likelihood threshold (models with ``log_prob``): higher likelihood, more likely a member.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.metrics import roc_auc_score, roc_curve
from torch import Tensor

from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.neighbours import nearest_neighbours

LOWER_BOUND_NOTE = (
    "an empirical lower bound on membership leakage from one attack; it cannot certify privacy "
    "(the (ε, δ) guarantee is the upper bound)"
)


def attack_summary(member_scores: Tensor, non_member_scores: Tensor) -> dict[str, float]:
    """AUROC and TPR at 1% FPR of a score that is higher for members."""
    truth = np.r_[np.ones(len(member_scores)), np.zeros(len(non_member_scores))]
    scores = torch.cat([member_scores, non_member_scores]).double().numpy()
    fpr, tpr, _ = roc_curve(truth, scores)
    return {"auroc": float(roc_auc_score(truth, scores)), "tpr_at_1pct_fpr": float(np.interp(0.01, fpr, tpr))}


def membership_audit(
    model: DPGenerativeModel,
    members: tuple[Tensor, Tensor],
    non_members: tuple[Tensor, Tensor],
    num_samples: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Attack ``model`` with real ``members`` (images, labels it was trained on) against
    held-out ``non_members``; both as (images, labels)."""
    if len(members[0]) == 0 or len(non_members[0]) == 0:
        raise UserError("the audit needs at least one member and one non-member")
    samples = model.sample(num_samples, seed=seed)
    report: dict[str, Any] = {
        "nearest_neighbour": attack_summary(
            -nearest_neighbours(members[0], samples)[0], -nearest_neighbours(non_members[0], samples)[0]
        ),
        "protocol": {
            "members": len(members[0]),
            "non_members": len(non_members[0]),
            "synthetic_samples": num_samples,
            "note": LOWER_BOUND_NOTE,
        },
    }
    if model.has_density:
        with torch.no_grad():
            scores = [_log_prob(model, images, labels) for images, labels in (members, non_members)]
        report["likelihood"] = attack_summary(*scores)
    return report


def audit_member_split(
    model: DPGenerativeModel, dataset: str, label: int | None, size: int, seed: int
) -> dict[str, Any]:
    """Rebuild the split of a named dataset the model was trained on from its ledger's dataset id, and attack its
    first ``size`` members against as many held-out images; the nearest-neighbour AUROC is the value."""
    from zoo.data import ImageDataModule

    data = ImageDataModule(dataset, label=label)
    entries = model.privacy_ledger
    trained_on = {name for e in (entries.entries if entries else []) for name in (e.dataset_id, e.partition_of)}
    if data.dataset_id not in trained_on:
        raise UserError(
            f"the audit rebuilds the member split {data.dataset_id}, but the model's ledger names "
            f"{sorted(n for n in trained_on if n)}"
        )
    data.setup()
    members = tuple(t[:size] for t in data.train_set.tensors)
    non_members = tuple(t[:size] for t in data.validation_set.tensors)
    report = membership_audit(model, members, non_members, num_samples=size, seed=seed)
    nearest = report["nearest_neighbour"]
    return {"value": nearest["auroc"], "tpr_at_1pct_fpr": nearest["tpr_at_1pct_fpr"], **report}


def _log_prob(model: DPGenerativeModel, images: Tensor, labels: Tensor) -> Tensor:
    return model.log_prob(images, labels) if model.num_classes is not None else model.log_prob(images)
