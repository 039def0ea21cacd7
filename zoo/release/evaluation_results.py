"""An evaluation as a card shows it: ``model-index`` entries (huggingface_hub's ``EvalResult`` fields), each
naming the extractor, classifier, score or attack that produced it and the protocol it ran under. A side value
that the metric's spec names (``Metric.side_rows``: precision/recall's recall) gets a row of its own."""

from __future__ import annotations

from typing import Any

from zoo.release.metric_result import MetricResult
from zoo.release.metric_spec import metric_spec, registered_metrics


def evaluator_of(result: MetricResult) -> str:
    """What produced a result: the feature extractor, classifier, score or attack."""
    for key in ("feature_extractor", "classifier", "score"):
        if result.protocol.get(key):
            return str(result.protocol[key])
    return "nearest-neighbour membership attack" if "nearest_neighbour" in result.details else "log_prob"


def _card_number(value: float, decimals: int) -> str:
    """``decimals`` decimals, or 3 significant digits for a small non-zero number (a KID of 0.0012)."""
    return f"{value:.3g}" if 0 < abs(value) < 10**-decimals * 10 else f"{value:.{decimals}f}"


def side_row(name: str, side: str) -> str:
    """The ``metric_type`` of the card row of a metric's side value (``prc_recall``)."""
    return f"{name}_{side}"


def row_metric(metric_type: str) -> str:
    """The metric a card row publishes: its ``metric_type``, or the metric whose side row it is; the type itself
    where no metric shows such a row (which no spec then declares)."""
    metrics = registered_metrics()
    sides = {side_row(name, side): name for name, metric in metrics.items() for side in metric.side_rows}
    return metric_type if metric_type in metrics else sides.get(metric_type, metric_type)


def card_results(evaluation: dict[str, Any], dataset_name: str, task_type: str) -> list[dict[str, Any]]:
    """``model-index`` entries for a card, each naming its evaluator: one per metric, and one per side value its
    spec gives a row."""
    entries = []
    for name, stored in evaluation["results"].items():
        result = MetricResult.from_dict(stored)
        rows = metric_spec(name).side_rows
        sides = {k: round(v, 4) for k, v in result.side_values.items() if k not in rows}
        runs = {"runs": len(result.runs)} if result.runs is not None else {}
        shown = [(name, result.value, result.std, {"unit": result.unit, **runs, **sides})]
        sided = [side for side in rows if side in result.side_values]
        shown += [(side_row(name, side), result.side_values[side], None, {}) for side in sided]
        for metric, value, std, described in shown:
            spread = f" ± {_card_number(std, 2)}" if std is not None else ""
            config = {**described, **result.protocol}
            entries.append(
                {
                    "task_type": task_type,
                    "dataset_type": evaluation["dataset"],
                    "dataset_name": dataset_name,
                    "metric_type": metric,
                    "metric_name": f"{metric} ({evaluator_of(result)}){spread}",
                    "metric_value": float(_card_number(value, 3)),
                    "metric_config": "; ".join(f"{k}={v}" for k, v in config.items() if v is not None),
                }
            )
    return entries
