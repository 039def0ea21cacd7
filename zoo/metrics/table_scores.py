"""Each table metric's result (value and protocol) from the model and the rows of the split it was trained on
(DP-NF §4–5): the computations of ``zoo.metrics.table_computations`` call these."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from zoo.baselines import DPGaussianMixture
from zoo.data.table_datamodule import TableDataModule
from zoo.data.tables import ROW_NORM_BOUNDS
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.tabular import anomaly_auroc, cross_validated_knn_mse, knn_regression_mse
from zoo.privacy.ledger import stated_epsilon


def log_likelihood(model: DPGenerativeModel, test: Tensor, table: str, split: int) -> dict[str, Any]:
    with torch.no_grad():
        scores = model.log_prob(test)
    return {
        "value": float(scores.mean()),
        "std_error": float(scores.std() / len(scores) ** 0.5),
        "unit": f"nats per row ({test.shape[1]} features, table units)",
        "protocol": {"data": f"{table} split {split} test rows ({len(test)})"},
    }


def anomaly_detection(
    model: DPGenerativeModel, test: Tensor, anomalies: Tensor, table: str, split: int
) -> dict[str, Any]:
    """AUROC of the log-likelihood threshold, with the ROC curve kept at 51 false-positive rates."""
    with torch.no_grad():
        roc = anomaly_auroc(model.log_prob(test), model.log_prob(anomalies))
    grid = np.linspace(0, 1, 51)
    return {
        "value": roc["auroc"],
        "roc": {"fpr": grid.tolist(), "tpr": np.interp(grid, roc["fpr"], roc["tpr"]).round(4).tolist()},
        "protocol": {
            "score": "log-likelihood threshold",
            "data": f"{table} split {split} test rows against as many tail anomalies (5-30th, 70-95th percentiles)",
        },
    }


def knn(synthetic: Tensor, test: Tensor, table: str, split: int, seed: int) -> dict[str, Any]:
    """The real-data reference is cross-validated on the test rows, never fitted on the protected training rows."""
    return {
        "value": knn_regression_mse(synthetic, test),
        "real_data_reference": cross_validated_knn_mse(test, seed=seed),
        "protocol": {
            "classifier": "5-nearest-neighbour regressor, last column as target",
            "data": f"trained on {len(synthetic)} synthetic rows, MSE on {table} split {split} test rows; "
            "real_data_reference: 5-fold cross-validation on the same test rows",
        },
    }


def dp_mog(model: DPGenerativeModel, data: TableDataModule, row_norm_bound: float | None, seed: int) -> dict[str, Any]:
    """DP-EM with 3 components at the (ε, δ) and accountant of the model's guarantee on this split.

    A second release of the training rows that the model's ledger does not hold: a local diagnostic."""
    bound = row_norm_bound or ROW_NORM_BOUNDS.get(data.table)
    if bound is None:
        raise UserError(
            f"the DP-MoG baseline needs row_norm_bound, a public bound on the rows' L2 norms of {data.table}"
        )
    guarantee = model.privacy_ledger.guarantees()[data.dataset_id]
    baseline = DPGaussianMixture(components=3, iterations=10, clip_bound=bound)
    baseline.fit(
        data.train_rows, guarantee["epsilon"], guarantee["delta"], data.dataset_id, guarantee["accountants"][0]
    )
    with torch.no_grad():
        log_likelihood = float(baseline.log_prob(data.test_rows).mean())
    return {
        "value": log_likelihood,
        "unit": "test log-likelihood, nats per row",
        "knn_mse": knn_regression_mse(baseline.sample(len(data.train_rows), seed=seed), data.test_rows),
        "protocol": {
            "score": f"DP-MoG baseline (DP-EM, 3 components, 10 iterations, rows clipped to {bound:g}) "
            "at the model's (ε, δ)",
            "epsilon": stated_epsilon(guarantee["epsilon"]),
            "noise_multiplier": round(baseline.privacy_ledger.entries[0].noise_multiplier, 4),
        },
    }
