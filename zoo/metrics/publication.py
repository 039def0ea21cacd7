"""Which evaluation numbers a model card may publish.

A card's (ε, δ) covers everything the card, config.json, MODEL_CARDS.md and the figures
publish. Numbers computed from the released weights, their samples and data outside the
protected set (the test split, the held-out validation images) are post-processing and free.
A metric whose spec (``zoo.metrics.specs``) says it reads the protected training records outside the model's ledger,
or any metric computed against them (``--reference train``), is a *local diagnostic*: it runs and prints, but
``--write-card`` (``zoo.metrics.record_evaluation``) refuses to publish it. Publication fails closed: a metric
without a spec is refused too.
"""

from __future__ import annotations

from collections.abc import Iterable

from zoo.errors import UserError
from zoo.release.metric_spec import registered_metrics

#: the shipped metrics that read the protected training records outside the model's ledger, and why (their specs'
#: ``protected_because``)
LOCAL_DIAGNOSTICS = {
    name: metric.protected_because for name, metric in registered_metrics().items() if metric.reads_protected_records
}


class UnpublishableMetricError(UserError):
    """A card was asked to publish a number read from the protected records outside the ledger."""


def check_reference_publishable(reason: str | None) -> None:
    """Refuse an evaluation against protected records: the ``train`` protocol (``zoo.metrics.reference``),
    whose ``reason`` an evaluation records as ``not_publishable``."""
    if reason:
        raise UnpublishableMetricError(
            "a model card publishes only what its (ε, δ) covers, and numbers computed against the training split "
            f"are not covered ({reason}). "
            "Run --reference train without --write-card, as a local diagnostic to compare with the literature, "
            "and publish the evaluation against the test split."
        )


def check_publishable(metrics: Iterable[str]) -> None:
    """Refuse, with the reason, any metric whose spec says it reads the protected records, and any metric without a
    spec: publication fails closed, so a number is published only where a spec says it reads no protected record."""
    specs = registered_metrics()
    names = list(dict.fromkeys(metrics))
    unknown = [name for name in names if name not in specs]
    if unknown:
        raise UnpublishableMetricError(
            f"a model card publishes only metrics whose spec says they read no protected records, and {unknown} "
            f"have none (zoo.release.metric_spec.register_metric); known: {list(specs)}"
        )
    refused = [name for name in names if specs[name].reads_protected_records]
    if refused:
        reasons = "; ".join(f"{name}: {specs[name].protected_because}" for name in refused)
        raise UnpublishableMetricError(
            f"a model card publishes only what its (ε, δ) covers, and {refused} read the protected training "
            f"records outside the model's privacy ledger ({reasons}). Run them without --write-card as local "
            "diagnostics, and publish the other metrics."
        )
