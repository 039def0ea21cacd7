"""Which evaluation each family of datasets runs: a registry that ``zoo.evaluate`` asks, so that
shared code names no dataset. Image and table evaluations register themselves on import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zoo.errors import UserError


@dataclass(frozen=True)
class Evaluator:
    """``run(model, dataset, metrics, num_samples, seed, progress, figures, **options)`` → evaluation."""

    datasets: tuple[str, ...]
    metrics: tuple[str, ...]
    #: the Hub ``model-index`` task of its results
    task_type: str
    run: Callable[..., dict[str, Any]]
    #: keyword options specific to this family (``label`` for images, ``split`` for tables)
    options: tuple[str, ...] = ()
    #: datasets given by path rather than by name (an image folder)
    accepts: Callable[[str], bool] | None = None
    #: what ``zoo.evaluate`` computes when no metrics are named
    default_metrics: Callable[[str], tuple[str, ...]] | None = None


_EVALUATORS: dict[str, Evaluator] = {}


def register_evaluator(evaluator: Evaluator) -> Evaluator:
    for dataset in evaluator.datasets:
        _EVALUATORS[dataset] = evaluator
    return evaluator


def evaluator_for(dataset: str) -> Evaluator:
    """The family of a named dataset, or of a path one family accepts (an image folder)."""
    if dataset in _EVALUATORS:
        return _EVALUATORS[dataset]
    for evaluator in evaluators():
        if evaluator.accepts is not None and evaluator.accepts(str(dataset)):
            return evaluator
    raise UserError(f"unknown dataset {dataset!r}: known are {sorted(_EVALUATORS)}, or the path of an image folder")


def evaluators() -> list[Evaluator]:
    """Each registered family once, in registration order."""
    return list({id(e): e for e in _EVALUATORS.values()}.values())


def known_metrics() -> tuple[str, ...]:
    """Every metric of every registered family, in registration order."""
    return tuple(dict.fromkeys(m for evaluator in evaluators() for m in evaluator.metrics))
