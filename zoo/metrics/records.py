"""Recording an evaluation in a model folder: config.json, the card, and the evaluation's figures.

A card holds one evaluation protocol (dataset, reference images, sample count, seed, label). A later
``--write-card`` under the same protocol adds its metrics to the card's (a slow metric such as ``cas_resnet``
can come after ``fid``), and the card names the command that measured each; a different protocol replaces
the card's evaluation only when asked (``replace``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.errors import TargetExistsError
from zoo.metrics.datasets import evaluator_for
from zoo.metrics.publication import check_publishable, check_reference_publishable
from zoo.metrics.reference import check_held_out, dataset_name
from zoo.privacy import PrivacyLedger
from zoo.release.cards import model_card
from zoo.release.evaluation_results import card_results
from zoo.release.layout import CARD_NAME, load_config, write_config
from zoo.release.registry import default_load_name


def check_card_takes(directory: str | Path, protocol: dict[str, Any], replace: bool = False) -> None:
    """Before any work: whether an evaluation under ``protocol`` (some of the keys of an evaluation's details:
    ``dataset``, ``seed``, ``label``, ``num_samples``) can join the evaluation the card holds."""
    previous = (load_config(Path(directory)).get("evaluation") or {}).get("details")
    if previous and not replace:
        _refuse_other_protocol(directory, previous, {**protocol, "dataset": dataset_name(protocol["dataset"])})


def check_model_held_out(directory: str | Path, dataset: str, reference: str | None) -> None:
    """Before any work, for a card: the evaluation images of an image dataset share no record with those the
    model in ``directory`` protects, as far as this machine can show (``zoo.metrics.reference.check_held_out``)."""
    if evaluator_for(dataset).task_type != "image-generation":
        return
    config = load_config(Path(directory))
    ledger = PrivacyLedger.from_dict(config["privacy_ledger"]) if config.get("privacy_ledger") else None
    shape = (config.get("architecture") or {}).get("image_shape")
    check_held_out(dataset, shape, reference, config.get("data"), ledger)


def record_evaluation(directory: str | Path, evaluation: dict[str, Any], command: str, replace: bool = False) -> None:
    """Store an evaluation and its figures (PIL images under ``"figures"``) in a model folder and
    regenerate the card. Under the protocol of the card's evaluation its metrics join the card's (the module
    docstring); under another, ``replace`` must be given. Refuses local diagnostics
    (``zoo.metrics.publication``): a card publishes only what its guarantee covers."""
    check_publishable(evaluation["results"])
    check_reference_publishable(evaluation.get("not_publishable"))
    directory = Path(directory)
    config = load_config(directory)
    task_type = evaluator_for(evaluation["dataset"]).task_type
    evaluation = {**evaluation, "dataset": dataset_name(evaluation["dataset"])}
    figures = evaluation.pop("figures", {})
    previous = config.get("evaluation") or {}
    kept = previous if previous.get("details") and not replace else {}
    if kept:
        _refuse_other_protocol(directory, kept["details"], evaluation)
        if set(evaluation["results"]) >= set(kept["details"]["results"]):
            kept = {}  # every earlier metric measured again: this command alone stands for the card
    for name, picture in figures.items():
        picture.save(directory / name)
    if kept:
        details = {**evaluation, "results": {**kept["details"]["results"], **evaluation["results"]}}
        added = [*kept.get("added", []), {"command": command, "metrics": list(evaluation["results"])}]
        shown = list(dict.fromkeys([*kept.get("figures", []), *figures]))
        config["evaluation"] = _card_evaluation(details, task_type, kept["command"], added, shown)
    else:
        config["evaluation"] = _card_evaluation(evaluation, task_type, command, [], list(figures))
    write_config(directory, config)
    model_card(config, default_load_name(config["model_id"], directory)).save(directory / CARD_NAME)


def _card_evaluation(
    details: dict[str, Any], task_type: str, command: str, added: list[dict[str, Any]], figures: list[str]
) -> dict[str, Any]:
    return {
        "command": command,
        **({"added": added} if added else {}),
        "results": card_results(details, details["dataset"], task_type),
        "details": details,
        "figures": figures,
    }


def _refuse_other_protocol(directory: str | Path, previous: dict[str, Any], protocol: dict[str, Any]) -> None:
    differing = {
        key: (previous.get(key), value)
        for key, value in protocol.items()
        if key != "results" and key in previous and previous[key] != value
    }
    if differing:
        described = ", ".join(f"{key} {old!r} on the card, {new!r} now" for key, (old, new) in differing.items())
        raise TargetExistsError(
            f"{directory} holds an evaluation under another protocol ({described}): its metrics would not be "
            "comparable. Evaluate under the card's protocol to add to it, or pass --replace-evaluation "
            "(replace=True) to replace it"
        )
