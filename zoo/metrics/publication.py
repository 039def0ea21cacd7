"""The shipped local diagnostics: the metrics that run and print but that no card publishes. The rule that refuses
them, and any name without a spec, is ``zoo.release.publication``: under the release, beside the specs, so that
``build_config`` checks what ``save_pretrained`` and ``push_to_hub`` are given. Its error is named here too, for
the evaluation's modules that raise it (``zoo.metrics.reference``).
"""

from __future__ import annotations

from zoo.release.metric_spec import registered_metrics
from zoo.release.publication import UnpublishableMetricError

__all__ = ["LOCAL_DIAGNOSTICS", "UnpublishableMetricError"]

#: the shipped metrics that read the protected training records outside the model's ledger, and why (their specs'
#: ``protected_because``)
LOCAL_DIAGNOSTICS = {
    name: metric.protected_because for name, metric in registered_metrics().items() if metric.reads_protected_records
}
