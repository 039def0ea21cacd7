"""Recording an evaluation in a model folder: config.json, the card, and the evaluation's figures, written all at
once (``zoo.release.staging``). ``evaluate_into_card`` (``zoo.evaluate_into_card``, ``dpzoo evaluate
--write-card``) evaluates a model and records the result, refusing before any work what a card cannot take.

A card holds one evaluation protocol (dataset, reference images, sample count, seed, label). A later
evaluation under the same protocol adds its metrics to the card's (a slow metric such as ``cas_resnet``
can come after ``fid``), and the card names the command that measured each; a different protocol replaces
the card's evaluation only when asked (``replace``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.errors import TargetExistsError
from zoo.evaluate_request import DEFAULT_DEVICE, EvaluateRequest
from zoo.metrics.datasets import evaluator_for
from zoo.metrics.evaluate import evaluate
from zoo.metrics.reference import TRAIN, check_held_out, dataset_name, training_split_reason
from zoo.privacy import PrivacyLedger
from zoo.release.cards import model_card
from zoo.release.evaluation_results import card_results
from zoo.release.layout import CARD_NAME, load_config, write_config
from zoo.release.loading import resolve
from zoo.release.publication import check_publishable, check_reference_publishable
from zoo.release.registry import default_load_name
from zoo.release.staging import staged


def evaluate_into_card(
    model: str | Path,
    dataset: str,
    metrics: Sequence[str] | None = None,
    *,
    num_samples: int | None = None,
    seed: int = 0,
    replace: bool = False,
    device: str | torch.device | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Evaluate ``model`` (an id or a model folder) as ``zoo.evaluate`` does, with the family's figures, and record
    the evaluation in its folder (``record_evaluation``) with the ``dpzoo evaluate`` command that repeats it;
    returns the evaluation. ``options``: ``zoo.evaluate``'s (``reference``, ``label``, ``runs``, ...).

    What a card cannot take is refused before any sample is drawn: a metric that reads the protected records, the
    training split as reference, a protocol other than the card's evaluation's (unless ``replace``), and reference
    images that this machine cannot show are held out of the model's training."""
    folder = resolve(model)
    metrics = tuple(metrics) if metrics is not None else None
    reference, label = options.get("reference"), options.get("label")
    check_publishable(metrics or ())
    if reference == TRAIN:
        check_reference_publishable(training_split_reason(dataset))
    given = {"num_samples": num_samples} if num_samples is not None else {}
    check_card_takes(folder, {"dataset": dataset, "seed": seed, "label": label, **given}, replace)
    check_model_held_out(folder, dataset, reference)
    evaluation = evaluate(
        folder, dataset, metrics=metrics, num_samples=num_samples, seed=seed, figures=True, device=device, **options
    )
    weights = options.get("feature_extractor_weights_path")
    command = EvaluateRequest(
        str(model),
        dataset=dataset,
        reference=reference,
        metrics=",".join(metrics) if metrics else None,
        label=label,
        num_samples=num_samples,
        split=options.get("split"),
        runs=options.get("runs"),
        epochs=options.get("epochs"),
        seed=seed,
        feature_extractor_weights=str(weights) if weights else None,
        device=DEFAULT_DEVICE if device is None else str(device),
        write_card=True,
        replace_evaluation=replace,
    ).card_command()
    record_evaluation(folder, evaluation, command, replace)
    return evaluation


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
    """Store an evaluation and its figures (PIL images under ``"figures"``) in a model folder and regenerate the
    card, all at once (a failure leaves the folder's files as they were). Under the protocol of the card's
    evaluation its metrics join the card's (the module docstring); under another, ``replace`` must be given.
    Refuses local diagnostics (``zoo.release.publication``): a card publishes only what its guarantee covers."""
    check_publishable(evaluation["results"])
    check_reference_publishable(evaluation.get("not_publishable"))
    directory = Path(directory)
    config = load_config(directory)
    task_type = evaluator_for(evaluation["dataset"]).task_type
    evaluation = {**evaluation, "dataset": dataset_name(evaluation["dataset"])}
    figures = evaluation.pop("figures", {})
    evaluation.pop("label_baseline", None)  # printed beside the accuracies: the test labels' shares, no metric
    previous = config.get("evaluation") or {}
    kept = previous if previous.get("details") and not replace else {}
    if kept:
        _refuse_other_protocol(directory, kept["details"], evaluation)
        if set(evaluation["results"]) >= set(kept["details"]["results"]):
            kept = {}  # every earlier metric measured again: this command alone stands for the card
    if kept:
        details = {**evaluation, "results": {**kept["details"]["results"], **evaluation["results"]}}
        added = [*kept.get("added", []), {"command": command, "metrics": list(evaluation["results"])}]
        shown = list(dict.fromkeys([*kept.get("figures", []), *figures]))
        config["evaluation"] = _card_evaluation(details, task_type, kept["command"], added, shown)
    else:
        config["evaluation"] = _card_evaluation(evaluation, task_type, command, [], list(figures))
    with staged(directory) as staging:
        for name, picture in figures.items():
            picture.save(staging / name)
        write_config(staging, config)
        model_card(config, default_load_name(config["model_id"], directory)).save(staging / CARD_NAME)


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
