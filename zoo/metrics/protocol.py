"""One result's protocol in one line for the terminal, from the same entries as its card's protocol column: what
computed it (extractor, classifier, score, attack), and on what: samples, reference set and its count, or the
training and test data."""

from __future__ import annotations

from typing import Any

from zoo.release.evaluation_results import evaluator_of
from zoo.release.metric_result import MetricResult


def protocol_line(result: dict[str, Any]) -> str:
    """``result``'s evaluator and data in one line, e.g. ``inception-v3-compat; 500 samples vs 10,000 images of
    cifar10 official test split; FID biased upwards below 10,000 samples (KID beside it)``."""
    measured = MetricResult.from_dict(result)
    protocol = measured.protocol
    parts = [evaluator_of(measured), *_data(protocol)]
    if protocol.get("bias"):
        samples = protocol.get("samples")
        parts.append(f"FID biased upwards at {_count(samples)} samples: compare at equal n, or read the KID")
    return "; ".join(part for part in parts if part)


def _data(protocol: dict[str, Any]) -> list[str]:
    """What the result was computed on, by the protocol entries each family of metrics writes."""
    samples, reference = protocol.get("samples"), protocol.get("reference")
    if samples is not None and isinstance(reference, int):  # FID, KID, IS, precision/recall
        where = protocol.get("reference_set")
        return [f"{_count(samples)} samples vs {_count(reference)} images" + (f" of {where}" if where else "")]
    if samples is not None:  # the privacy score: its reference is a description
        return [f"{_count(samples)} samples vs {reference}" if reference else f"{_count(samples)} samples"]
    if "members" in protocol:  # the membership audit
        return [
            f"{_count(protocol['members'])} members vs {_count(protocol['non_members'])} non-members, "
            f"{_count(protocol['synthetic_samples'])} samples"
        ]
    parts = [f"{key} {protocol[key]}" for key in ("train", "test") if protocol.get(key)]
    return parts + ([str(protocol["data"])] if protocol.get("data") else [])


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)
