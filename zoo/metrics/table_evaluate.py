"""``zoo.evaluate`` for tabular density models (DP-NF §4–5) on the split they were trained on."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import Tensor

from zoo.baselines import DPGaussianMixture
from zoo.data.table_datamodule import TableDataModule, split_and_validation
from zoo.data.tables import ROW_NORM_BOUNDS, TABLES
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.datasets import Evaluator, register_evaluator
from zoo.metrics.dp_ad import dp_anomaly_detection_report
from zoo.metrics.tabular import anomaly_auroc, cross_validated_knn_mse, knn_regression_mse, tail_anomalies
from zoo.plots import roc_picture, table_model_picture

TABLE_METRICS = ("log_likelihood", "knn_mse", "anomaly_auroc", "dp_mog", "dp_ad")


def evaluate_table(
    model: DPGenerativeModel,
    table: str,
    metrics: tuple[str, ...],
    num_samples: int | None = None,
    seed: int = 0,
    progress: bool = True,
    figures: bool = False,
    split: int = 0,
    dp_ad_epsilon: float = 1.0,
    row_norm_bound: float | None = None,
) -> dict[str, Any]:
    """Test log-likelihood, kNN-regression MSE of synthetic rows, likelihood-threshold anomaly
    AUROC, the DP-MoG baseline at the model's own (ε, δ), and DP-AD, all on ``split``'s test rows.

    The first three read only the model, its samples and the test rows (public), so a card may
    publish them; ``dp_mog`` and ``dp_ad`` read the protected training rows outside the model's
    ledger and are local diagnostics (``zoo.metrics.publication``).

    ``num_samples`` synthetic rows (default: as many as the training rows) train the kNN regressor;
    DP-MoG clips rows to ``row_norm_bound`` (default: the table's bound in ``ROW_NORM_BOUNDS``);
    DP-AD answers every query at ``dp_ad_epsilon``. ``figures``: the model's samples (and density,
    in 2-D) next to the real test rows, and the anomaly ROC curve when it was measured.
    """
    unknown = [m for m in metrics if m not in TABLE_METRICS]
    if unknown:
        raise UserError(f"unknown metrics for tables {unknown}; known: {list(TABLE_METRICS)}")
    data = _training_split(model, table, split)
    train, test = data.train_rows, data.test_rows
    results: dict[str, Any] = {}
    if "log_likelihood" in metrics:
        results["log_likelihood"] = _log_likelihood(model, test, table, split)
    if "knn_mse" in metrics:
        synthetic = model.sample(num_samples or len(train), seed=seed, progress=progress)
        results["knn_mse"] = _knn(synthetic, test, table, split, seed)
    anomalies = tail_anomalies(test, len(test), seed=seed)
    if "anomaly_auroc" in metrics:
        results["anomaly_auroc"] = _anomaly_detection(model, test, anomalies, table, split)
    if "dp_mog" in metrics:
        results["dp_mog"] = _dp_mog(model, data, row_norm_bound, seed)
    if "dp_ad" in metrics:
        results["dp_ad"] = dp_anomaly_detection_report(train, test, anomalies, dp_ad_epsilon, seed, progress=progress)
    evaluation = {
        "dataset": table,
        "split": split,
        "num_samples": num_samples or len(train),
        "seed": seed,
        "results": results,
    }
    if figures:
        evaluation["figures"] = _figures(model, test, results)
    return evaluation


def _figures(model: DPGenerativeModel, test: Tensor, results: dict[str, Any]) -> dict[str, Image.Image]:
    pictures = {"real_vs_synthetic.png": table_model_picture(model, real=test)}
    anomaly = results.get("anomaly_auroc")
    if anomaly:
        title = f"anomaly detection by log-likelihood, AUROC {anomaly['value']:.3f}"
        pictures["anomaly_roc.png"] = roc_picture(anomaly["roc"]["fpr"], anomaly["roc"]["tpr"], title)
    return pictures


def _training_split(model: DPGenerativeModel, table: str, split: int) -> TableDataModule:
    """The split named in the model's ledger, with the validation rows it held out: evaluating on
    rows it trained on would flatter it."""
    split_id = TableDataModule(table, split=split, standardisation="public").dataset_id
    ledger = model.privacy_ledger
    trained_on = {e.dataset_id for e in (ledger.entries if ledger else [])}
    for trained in sorted(trained_on):
        trained_split, validation_fraction = split_and_validation(trained)
        if trained_split == split_id:
            data = TableDataModule(
                table, split=split, validation_fraction=validation_fraction, standardisation="public"
            )
            data.setup()
            return data
    raise UserError(
        f"evaluation uses the test rows of {split_id}, but the model was trained on {sorted(trained_on)}; "
        "pass the split it was trained on"
    )


def _log_likelihood(model: DPGenerativeModel, test: Tensor, table: str, split: int) -> dict[str, Any]:
    with torch.no_grad():
        scores = model.log_prob(test)
    return {
        "value": float(scores.mean()),
        "std_error": float(scores.std() / len(scores) ** 0.5),
        "unit": f"nats per row ({test.shape[1]} features, table units)",
        "protocol": {"data": f"{table} split {split} test rows ({len(test)})"},
    }


def _anomaly_detection(
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


def _knn(synthetic: Tensor, test: Tensor, table: str, split: int, seed: int) -> dict[str, Any]:
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


def _dp_mog(model: DPGenerativeModel, data: TableDataModule, row_norm_bound: float | None, seed: int) -> dict[str, Any]:
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
            "epsilon": round(guarantee["epsilon"], 4),
            "noise_multiplier": round(baseline.privacy_ledger.entries[0].noise_multiplier, 4),
        },
    }


register_evaluator(
    Evaluator(
        datasets=TABLES,
        metrics=TABLE_METRICS,
        task_type="density-estimation",
        run=evaluate_table,
        options=("split", "dp_ad_epsilon", "row_norm_bound"),
    )
)
