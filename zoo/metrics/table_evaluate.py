"""``zoo.evaluate`` for tabular density models (DP-NF §4–5) on the split they were trained on: the table metrics'
specs (``zoo.metrics.specs``) are checked, then computed on one ``TableRun``."""

from __future__ import annotations

from typing import Any

from PIL import Image
from torch import Tensor

from zoo.data.table_datamodule import TableDataModule, split_and_validation
from zoo.data.tables import TABLES
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.computation import check_requested, compute
from zoo.metrics.datasets import Evaluator, register_evaluator
from zoo.metrics.runs import TableRun
from zoo.plots import roc_picture, table_model_picture


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
    check_requested(metrics, table, model, None)
    data = _training_split(model, table, split)
    num_samples = num_samples or len(data.train_rows)
    run = TableRun(model, table, split, data, num_samples, seed, progress, dp_ad_epsilon, row_norm_bound)
    results = compute(metrics, "table", run)
    evaluation = {"dataset": table, "split": split, "num_samples": num_samples, "seed": seed, "results": results}
    if figures:
        evaluation["figures"] = _figures(model, data.test_rows, results)
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


register_evaluator(
    Evaluator(
        datasets=TABLES,
        data="table",
        task_type="density-estimation",
        run=evaluate_table,
        options=("split", "dp_ad_epsilon", "row_norm_bound"),
    )
)
