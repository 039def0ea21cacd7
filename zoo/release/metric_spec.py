"""Metrics by name: each metric is declared once, as a ``Metric``, with what it applies to and needs, whether it
reads the protected records, how it is computed and how the tables headline it. Evaluation, publication, cards and
tables ask these specs and name no metric.

The registry sits under the release so that cards and tables can read it; the shipped metrics are declared in
``zoo.metrics.specs`` (torch-free: ``dpzoo list`` reads them without torch), imported on the first lookup, as
``zoo.methods`` finds the methods. Whether a metric reads protected records has no default: publication fails
closed (``zoo.release.publication``), so a metric must say so to be published or refused."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any

from zoo.errors import UserError

#: a computation: ``compute(run, names)`` → results by name (``MetricResult`` dicts); ``run`` is the evaluation of
#: one family of data (``zoo.metrics.runs``), ``names`` every requested metric that shares the computation
Compute = Callable[[Any, tuple[str, ...]], dict[str, dict[str, Any]]]

#: the module whose import declares every shipped metric (imported on the first lookup)
METRICS_MODULE = "zoo.metrics.specs"


class UnknownMetricError(UserError, LookupError):
    """A metric name that no spec declares."""


@dataclass(frozen=True, kw_only=True)
class Headline:
    """How a metric headlines a model in the tables that compare models: the model table of README.md
    (``zoo.release.model_table``), ``dpzoo list`` and MODEL_CARDS.md's results table, which show some columns."""

    #: its column, and its words in the model table ("CNN CAS", "FID"); metrics that share a column (an FID of two
    #: extractors) fill one cell of ``dpzoo list`` and the results table, the first declared that was measured
    column: str
    #: the format of its value (and spread) in the model table (``dpzoo list`` and the results table show one decimal)
    digits: str = ".1f"
    #: what measured it, named beside the number where metrics share the column ("LeNet")
    measured_by: str = ""
    #: a side value the results table shows in brackets after it (the real-data accuracy beside a CAS)
    beside: str = ""
    #: metrics beside which the model table leaves it out (a flow's log-likelihood per dimension beside its CAS)
    unless: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Metric:
    """One metric, declared once. ``reads_protected_records`` has no default: a metric that reads the protected
    records outside the model's ledger is a local diagnostic that no card publishes, and says why
    (``protected_because``)."""

    name: str
    #: its computation on each kind of data it applies to (``"images"``, ``"table"``)
    compute: Mapping[str, Compute]
    reads_protected_records: bool
    protected_because: str = ""
    #: it compares labels of samples (or of the model's classes) with the real data's: a class-conditional model
    #: with the real data's classes, every class (no ``label``)
    needs_labels: bool = False
    #: it reads the model's density (``log_prob``)
    needs_density: bool = False
    #: before any work: why it cannot run against a dataset (None where it can), for a metric that exists only for
    #: some datasets (the LeNet's, the audit's)
    refuses_dataset: Callable[[str], str | None] | None = None
    headline: Headline | None = None
    #: side values it measures beside its value that each get a row of their own on a card (precision/recall's
    #: recall); other side values stay in the protocol column of its row
    side_rows: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.reads_protected_records, bool):
            raise TypeError(f"{self.name}: reads_protected_records must be True or False")
        if self.reads_protected_records != bool(self.protected_because):
            raise ValueError(f"{self.name}: protected_because says why a metric reads protected records, and only then")
        if not self.compute:
            raise ValueError(f"{self.name}: compute names its computation for at least one kind of data")

    @property
    def data(self) -> tuple[str, ...]:
        """The kinds of data it applies to."""
        return tuple(self.compute)


_METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Declare ``metric``; a second metric of the same name is refused."""
    if not isinstance(metric, Metric):
        raise TypeError(f"register a Metric, not {type(metric).__name__}")
    if metric.name in _METRICS:
        raise ValueError(f"a metric named {metric.name!r} is declared already")
    _METRICS[metric.name] = metric
    return metric


def registered_metrics() -> dict[str, Metric]:
    """Every declared metric by name, in order of declaration (the shipped ones are imported on first use)."""
    importlib.import_module(METRICS_MODULE)
    return dict(_METRICS)


def metric_spec(name: str) -> Metric:
    """The metric declared as ``name``; ``UnknownMetricError`` names the known ones."""
    metrics = registered_metrics()
    if name not in metrics:
        raise UnknownMetricError(f"unknown metric {name!r}; known: {', '.join(metrics)}")
    return metrics[name]


def filling(column: str, measured: Container[str]) -> Metric | None:
    """The metric that fills ``column`` for a model that ``measured`` these metrics: the first declared."""
    return next(
        (m for m in registered_metrics().values() if m.headline and m.headline.column == column and m.name in measured),
        None,
    )
