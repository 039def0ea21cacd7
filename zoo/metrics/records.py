"""Recording an evaluation in a model folder: config.json, the card, and the evaluation's figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.metrics.datasets import evaluator_for
from zoo.metrics.publication import check_publishable, check_reference_publishable
from zoo.release.cards import model_card
from zoo.release.evaluation_results import card_results
from zoo.release.layout import CARD_NAME, load_config, write_config
from zoo.release.registry import default_load_name


def record_evaluation(directory: str | Path, evaluation: dict[str, Any], command: str) -> None:
    """Store an evaluation and its figures (PIL images under ``"figures"``) in a model folder and
    regenerate the card. Refuses local diagnostics (``zoo.metrics.publication``): a card publishes
    only what its guarantee covers."""
    check_publishable(evaluation["results"])
    check_reference_publishable(evaluation.get("not_publishable"))
    directory = Path(directory)
    config = load_config(directory)
    evaluation = dict(evaluation)
    figures = evaluation.pop("figures", {})
    for name, picture in figures.items():
        picture.save(directory / name)
    config["evaluation"] = {
        "command": command,
        "results": card_results(evaluation, evaluation["dataset"], evaluator_for(evaluation["dataset"]).task_type),
        "details": evaluation,
        "figures": list(figures),
    }
    write_config(directory, config)
    model_card(config, default_load_name(config["model_id"], directory)).save(directory / CARD_NAME)
