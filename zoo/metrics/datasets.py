"""Which evaluation each family of datasets runs: a registry that ``zoo.evaluate`` asks, so that shared code names
no dataset. The families register themselves (``image_evaluate``, ``table_evaluate``: they import torch) on the first
lookup; their metrics are the specs declared for their kind of data (``zoo.release.metric_spec``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zoo.errors import UserError
from zoo.release.metric_spec import registered_metrics

#: the modules whose import registers each family (imported on the first lookup)
FAMILIES = ("zoo.metrics.image_evaluate", "zoo.metrics.table_evaluate")


@dataclass(frozen=True)
class Evaluator:
    """``run(model, dataset, metrics, num_samples, seed, progress, figures, **options)`` → evaluation."""

    datasets: tuple[str, ...]
    #: the kind of data of its metrics' computations (``Metric.compute``): ``"images"``, ``"table"``
    data: str
    #: the Hub ``model-index`` task of its results
    task_type: str
    run: Callable[..., dict[str, Any]]
    #: keyword options specific to this family (``label`` for images, ``split`` for tables)
    options: tuple[str, ...] = ()
    #: datasets given by path rather than by name (an image folder)
    accepts: Callable[[str], bool] | None = None
    #: what ``zoo.evaluate`` computes when no metrics are named
    default_metrics: Callable[[str], tuple[str, ...]] | None = None

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric declared for its kind of data, in order of declaration."""
        return tuple(name for name, metric in registered_metrics().items() if self.data in metric.compute)


_EVALUATORS: dict[str, Evaluator] = {}


def register_evaluator(evaluator: Evaluator) -> Evaluator:
    """Register ``evaluator`` for its datasets; a dataset another evaluator has is refused."""
    taken = [dataset for dataset in evaluator.datasets if dataset in _EVALUATORS]
    if taken:
        raise ValueError(f"an evaluator is registered already for {taken}")
    for dataset in evaluator.datasets:
        _EVALUATORS[dataset] = evaluator
    return evaluator


def evaluator_for(dataset: str) -> Evaluator:
    """The family of a named dataset, or of a path one family accepts (an image folder)."""
    registered = _registered()
    if dataset in registered:
        return registered[dataset]
    for evaluator in evaluators():
        if evaluator.accepts is not None and evaluator.accepts(str(dataset)):
            return evaluator
    known = ", ".join(sorted(registered))
    raise UserError(f"unknown dataset {dataset!r}: known are {known}, or the path of an image folder")


def evaluators() -> list[Evaluator]:
    """Each registered family once, in registration order."""
    return list({id(e): e for e in _registered().values()}.values())


def known_metrics() -> tuple[str, ...]:
    """Every declared metric, in order of declaration."""
    return tuple(registered_metrics())


def _registered() -> dict[str, Evaluator]:
    for module in FAMILIES:
        importlib.import_module(module)
    return _EVALUATORS
