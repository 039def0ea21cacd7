"""How each table metric is computed on a ``zoo.metrics.runs.TableRun`` (the ``compute`` of its spec in
``zoo.metrics.specs``). Torch-free to import, so that the specs are: each computation imports its machinery when
it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zoo.metrics.runs import TableRun

Results = dict[str, dict[str, Any]]


def log_likelihood(run: TableRun, names: tuple[str, ...]) -> Results:
    """Mean log-likelihood of the test rows, with its standard error."""
    from zoo.metrics import table_scores

    return {"log_likelihood": table_scores.log_likelihood(run.model, run.test, run.table, run.split)}


def knn_mse(run: TableRun, names: tuple[str, ...]) -> Results:
    """kNN regression trained on synthetic rows, tested on the test rows."""
    from zoo.metrics import table_scores

    synthetic = run.model.sample(run.num_samples, seed=run.seed, progress=run.progress)
    return {"knn_mse": table_scores.knn(synthetic, run.test, run.table, run.split, run.seed)}


def anomaly_auroc(run: TableRun, names: tuple[str, ...]) -> Results:
    """The likelihood threshold's AUROC between the test rows and tail anomalies."""
    from zoo.metrics import table_scores

    return {"anomaly_auroc": table_scores.anomaly_detection(run.model, run.test, run.anomalies, run.table, run.split)}


def dp_mog(run: TableRun, names: tuple[str, ...]) -> Results:
    """The DP-MoG baseline fitted on the training rows at the model's own (ε, δ)."""
    from zoo.metrics import table_scores

    return {"dp_mog": table_scores.dp_mog(run.model, run.data, run.row_norm_bound, run.seed)}


def dp_ad(run: TableRun, names: tuple[str, ...]) -> Results:
    """DP-AD's released labels for the test rows and tail anomalies, from flows trained on the training rows."""
    from zoo.metrics.dp_ad import dp_anomaly_detection_report

    report = dp_anomaly_detection_report(
        run.data.train_rows, run.test, run.anomalies, run.dp_ad_epsilon, run.seed, progress=run.progress
    )
    return {"dp_ad": report}
