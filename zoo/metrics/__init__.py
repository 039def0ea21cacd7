"""Evaluation of private generators: torch-fidelity metrics, CAS, membership audits, with their protocols.

Each metric is declared once (``zoo.metrics.specs``). What needs torch is imported on first use, so that the specs,
``evaluate``'s checks of a request and ``protocol_line`` can be read without it (``dpzoo list``)."""

from __future__ import annotations

import importlib
from typing import Any

from zoo.metrics.evaluate import METRICS, evaluate
from zoo.metrics.protocol import protocol_line

_API = {
    "CLASSIFIERS": "zoo.metrics.classifiers",
    "FeatureWeightsUnavailable": "zoo.metrics.fidelity",
    "classifier_accuracy_on_synthetic": "zoo.metrics.cas",
    "fidelity_metrics": "zoo.metrics.fidelity",
    "membership_audit": "zoo.metrics.audit",
    "record_evaluation": "zoo.metrics.records",
}

__all__ = [
    "CLASSIFIERS",
    "METRICS",
    "FeatureWeightsUnavailable",
    "classifier_accuracy_on_synthetic",
    "evaluate",
    "fidelity_metrics",
    "membership_audit",
    "protocol_line",
    "record_evaluation",
]


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'zoo.metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
