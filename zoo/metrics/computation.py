"""Computing requested metrics by their specs (``zoo.release.metric_spec``), for every family of data: what the
specs need is checked before any data is read, then each computation runs once, for every metric that shares it."""

from __future__ import annotations

from typing import Any

from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.density import check_density
from zoo.release.metric_result import MetricResult
from zoo.release.metric_spec import metric_spec


def check_requested(metrics: tuple[str, ...], dataset: str, model: DPGenerativeModel, label: int | None) -> None:
    """Before any data is read, refuse a metric that does not exist for ``dataset``, a density metric of a model
    without one, and a metric that compares labels of an unconditional model or of one class (``label``)."""
    specs = [metric_spec(name) for name in metrics]
    refusals: dict[str, list[str]] = {}
    for spec in specs:
        reason = spec.refuses_dataset(dataset) if spec.refuses_dataset else None
        if reason:
            refusals.setdefault(reason, []).append(spec.name)
    if refusals:
        reason, names = next(iter(refusals.items()))
        raise UserError(f"{', '.join(names)}: {reason}")
    for spec in specs:
        if spec.needs_density:
            check_density(spec.name, model, label)
    labelled = ", ".join(spec.name for spec in specs if spec.needs_labels)
    if labelled and model.num_classes is None:
        raise UserError(f"{labelled} compare labels, but {model.method} is unconditional; drop {labelled}")
    if labelled and label is not None:
        raise UserError(f"{labelled} compare every class: drop label or {labelled}")


def compute(metrics: tuple[str, ...], data: str, run: Any) -> dict[str, dict[str, Any]]:
    """Results by name, in the order the metrics were requested: each computation once, with every requested metric
    that shares it (FID and KID one feature pass, the CAS classifiers one set of samples). A result that is not a
    ``MetricResult`` (a value and a protocol) is refused."""
    results: dict[str, dict[str, Any]] = {}
    done = set()
    for name in metrics:
        computation = metric_spec(name).compute[data]
        if computation in done:
            continue
        done.add(computation)
        sharing = tuple(other for other in metrics if metric_spec(other).compute[data] is computation)
        for measured, result in computation(run, sharing).items():
            MetricResult.from_dict(result)  # refuses a result without a value and a protocol
            results[measured] = result
    return results
