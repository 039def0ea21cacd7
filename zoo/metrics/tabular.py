"""Utility and anomaly-detection metrics for tabular density models (DP-NF §4–5)."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import mean_squared_error, roc_auc_score, roc_curve
from sklearn.model_selection import KFold, cross_val_score
from sklearn.neighbors import KNeighborsRegressor
from torch import Tensor

from zoo.errors import UserError


def knn_regression_mse(synthetic: Tensor, real_test: Tensor, neighbours: int = 5) -> float:
    """Train a kNN regressor on synthetic rows (last column = target, the rest = inputs) and
    return its mean squared error on the real test rows."""
    if synthetic.dim() != 2 or real_test.dim() != 2 or synthetic.shape[1] != real_test.shape[1]:
        shapes = f"{tuple(synthetic.shape)} and {tuple(real_test.shape)}"
        raise UserError(f"tables must be 2-D with equal numbers of columns, got {shapes}")
    if synthetic.shape[1] < 2:
        raise UserError("kNN regression needs at least one input column besides the target")
    regressor = KNeighborsRegressor(n_neighbors=neighbours).fit(synthetic[:, :-1].numpy(), synthetic[:, -1].numpy())
    return float(mean_squared_error(real_test[:, -1].numpy(), regressor.predict(real_test[:, :-1].numpy())))


def cross_validated_knn_mse(rows: Tensor, folds: int = 5, neighbours: int = 5, seed: int = 0) -> float:
    """Real-data reference for :func:`knn_regression_mse` from ``rows`` alone: each of ``folds``
    folds is predicted by a kNN regressor fitted on the others, and the MSEs are averaged."""
    if rows.dim() != 2 or rows.shape[1] < 2 or len(rows) < 2 * folds:
        raise UserError(f"need a 2-D table with >= 2 columns and >= {2 * folds} rows, got {tuple(rows.shape)}")
    scores = cross_val_score(
        KNeighborsRegressor(n_neighbors=neighbours),
        rows[:, :-1].numpy(),
        rows[:, -1].numpy(),
        scoring="neg_mean_squared_error",
        cv=KFold(folds, shuffle=True, random_state=seed),
    )
    return float(-scores.mean())


def tail_anomalies(reference: Tensor, rows: int, seed: int = 0) -> Tensor:
    """DP-NF §5: each feature drawn uniformly from its lower (5th–30th percentile) or upper
    (70th–95th) tail of ``reference``, the tail chosen by a fair coin per entry."""
    generator = torch.Generator().manual_seed(seed)
    levels = torch.tensor([0.05, 0.30, 0.70, 0.95], dtype=torch.float64)
    quantiles = torch.quantile(reference.double(), levels, dim=0)
    upper = torch.rand(rows, reference.shape[1], generator=generator) < 0.5
    low = torch.where(upper, quantiles[2], quantiles[0])
    high = torch.where(upper, quantiles[3], quantiles[1])
    uniform = torch.rand(rows, reference.shape[1], generator=generator, dtype=torch.float64)
    return (low + (high - low) * uniform).to(reference.dtype)


def anomaly_auroc(log_prob: Tensor, anomaly_log_prob: Tensor) -> dict[str, float | list[float]]:
    """AUROC of thresholding the log-likelihood (low = anomaly), with the ROC curve."""
    scores = -torch.cat([log_prob, anomaly_log_prob]).double().numpy()
    is_anomaly = np.r_[np.zeros(len(log_prob)), np.ones(len(anomaly_log_prob))]
    false_positive, true_positive, _ = roc_curve(is_anomaly, scores)
    return {
        "auroc": float(roc_auc_score(is_anomaly, scores)),
        "fpr": false_positive.tolist(),
        "tpr": true_positive.tolist(),
    }
