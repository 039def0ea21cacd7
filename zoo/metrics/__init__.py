"""Evaluation of private generators: torch-fidelity metrics, CAS, membership audits, with their protocols."""

from zoo.metrics.audit import membership_audit
from zoo.metrics.cas import classifier_accuracy_on_synthetic
from zoo.metrics.classifiers import CLASSIFIERS
from zoo.metrics.evaluate import METRICS, evaluate
from zoo.metrics.fidelity import FeatureWeightsUnavailable, fidelity_metrics
from zoo.metrics.protocol import protocol_line
from zoo.metrics.records import record_evaluation

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
