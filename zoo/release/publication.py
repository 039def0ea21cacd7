"""Which evaluation numbers a model card may publish.

A card's (ε, δ) covers everything the card, config.json, MODEL_CARDS.md and the figures
publish. Numbers computed from the released weights, their samples and data outside the
protected set (the test split, the held-out validation images) are post-processing and free.
A metric whose spec (``zoo.release.metric_spec``) says it reads the protected training records outside the model's
ledger, or any metric computed against them (``--reference train``), is a *local diagnostic*: it runs and prints,
but no card publishes it. Publication fails closed: a metric without a spec is refused too.

The rule sits under the release, beside the specs it reads, because every way an evaluation reaches config.json
checks it: ``--write-card`` (``zoo.metrics.record_evaluation``) before any work, and ``build_config`` (behind
``save_pretrained`` and ``push_to_hub``) and ``push_folder`` on the evaluation they are given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zoo.errors import UserError
from zoo.release.evaluation_results import row_metric
from zoo.release.metric_spec import registered_metrics


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


def check_evaluation_publishable(evaluation: Mapping[str, Any] | None, model_id: str) -> None:
    """Refuse an evaluation, in config.json's form, that a caller hands over whole (``save_pretrained``'s
    ``evaluation=``, a folder ``push_folder`` publishes) unless it passes the checks ``record_evaluation`` makes:
    a caller could otherwise publish a local diagnostic that ``--write-card`` refuses. Both the details and every
    card row are checked, as either is published."""
    if not evaluation:
        return
    rows = evaluation.get("results") or []
    if not isinstance(rows, list):
        raise UserError(
            f"{model_id}: evaluation must be a card's evaluation (config.json's, as zoo.evaluate_into_card records "
            f"it: a list of card rows under 'results'), not {type(rows).__name__} results as zoo.evaluate returns"
        )
    details = evaluation.get("details") or {}
    try:
        check_reference_publishable(details.get("not_publishable"))
        check_publishable([*details.get("results", {}), *(row_metric(row.get("metric_type", "")) for row in rows)])
    except UnpublishableMetricError as error:
        raise UnpublishableMetricError(
            f"{model_id}: will not publish the evaluation given: {str(error).rstrip('.')}. Pass an evaluation "
            "without them, as zoo.evaluate_into_card (dpzoo evaluate --write-card) records one, or none."
        ) from None
