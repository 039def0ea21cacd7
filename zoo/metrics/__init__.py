"""Evaluation of private generators: torch-fidelity metrics, CAS, membership audits, with their protocols.

Each metric is declared once (``zoo.metrics.specs``). What needs torch is imported on first use, so that the specs,
``evaluate``'s checks of a request and ``protocol_line`` can be read without it (``dpzoo list``)."""

from __future__ import annotations

from zoo.lazy import lazy_exports
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

__getattr__, __dir__ = lazy_exports(globals(), _API)
