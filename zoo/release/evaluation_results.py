"""An evaluation as a card shows it: ``model-index`` entries (huggingface_hub's ``EvalResult`` fields), each
naming the extractor, classifier, score or attack that produced it and the protocol it ran under."""

from __future__ import annotations

from typing import Any


def evaluator_of(result: dict[str, Any]) -> str:
    """What produced a result: the feature extractor, classifier, score or attack."""
    protocol = result["protocol"]
    for key in ("feature_extractor", "classifier", "score"):
        if protocol.get(key):
            return str(protocol[key])
    return "nearest-neighbour membership attack" if "nearest_neighbour" in result else "log_prob"


def _side_numbers(result: dict[str, Any]) -> dict[str, float]:
    """Numbers measured next to the headline value (a reference score, rates), rounded for the card."""
    return {k: round(v, 4) for k, v in result.items() if isinstance(v, float) and k not in ("value", "std")}


def _runs(result: dict[str, Any]) -> dict[str, int]:
    """How many training runs a mean ± std is over."""
    return {"runs": len(result["runs"])} if isinstance(result.get("runs"), list) else {}


def _card_number(value: float, decimals: int) -> str:
    """``decimals`` decimals, or 3 significant digits for a small non-zero number (a KID of 0.0012)."""
    return f"{value:.3g}" if 0 < abs(value) < 10**-decimals * 10 else f"{value:.{decimals}f}"


def card_results(evaluation: dict[str, Any], dataset_name: str, task_type: str) -> list[dict[str, Any]]:
    """``model-index`` entries for a card, each naming its evaluator."""
    entries = []
    for name, result in evaluation["results"].items():
        protocol = result["protocol"]
        evaluator = evaluator_of(result)
        spread = f" ± {_card_number(result['std'], 2)}" if "std" in result else ""
        entries.append(
            {
                "task_type": task_type,
                "dataset_type": evaluation["dataset"],
                "dataset_name": dataset_name,
                "metric_type": name,
                "metric_name": f"{name} ({evaluator}){spread}",
                "metric_value": float(_card_number(result["value"], 3)),
                "metric_config": "; ".join(
                    f"{k}={v}"
                    for k, v in {
                        "unit": result.get("unit"),
                        **_runs(result),
                        **_side_numbers(result),
                        **protocol,
                    }.items()
                    if v is not None
                ),
            }
        )
    return entries
