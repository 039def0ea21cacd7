"""Which evaluation numbers a model card may publish.

A card's (ε, δ) covers everything the card, config.json, MODEL_CARDS.md and the figures
publish. Numbers computed from the released weights, their samples and data outside the
protected set (the test split, the held-out validation images) are post-processing and free.
A metric that reads the protected training records outside the model's ledger, or any metric
computed against them (``--reference train``), is a *local diagnostic*: it runs and prints, but
``--write-card`` (``zoo.metrics.record_evaluation``) refuses to publish it.
"""

from __future__ import annotations

from collections.abc import Iterable

from zoo.errors import UserError

#: metrics that read the protected training records outside the model's ledger, and why
LOCAL_DIAGNOSTICS = {
    "audit": "the membership attack scores the model's own training images (the members), so its AUROC is "
    "a statistic of the protected records",
    "dp_mog": "DP-EM is fitted on the model's training rows at the model's own ε: a second release of those "
    "rows that the model's ledger does not hold (composed, the card's ε would no longer be true)",
    "dp_ad": "its voters are flows trained without DP on the model's training rows; the released labels cost ε "
    "per query, outside the model's ledger",
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
    """Refuse, with the reason, any metric that is a local diagnostic."""
    refused = [name for name in dict.fromkeys(metrics) if name in LOCAL_DIAGNOSTICS]
    if refused:
        reasons = "; ".join(f"{name}: {LOCAL_DIAGNOSTICS[name]}" for name in refused)
        raise UnpublishableMetricError(
            f"a model card publishes only what its (ε, δ) covers, and {refused} read the protected training "
            f"records outside the model's privacy ledger ({reasons}). Run them without --write-card as local "
            "diagnostics, and publish the other metrics."
        )
