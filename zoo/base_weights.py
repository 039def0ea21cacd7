"""Start a model from a base's released weights (``zoo.finetune``, ``dpzoo fit --init_from``), also when the
base was trained for another number of classes: the layers whose shape follows the class count (a label's
one-hot input) start afresh, everything else comes from the base, and the ledger says so. Whatever else
does not fit is refused in plain words, before any work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zoo.methods import DPGenerativeModel
from zoo.privacy import PrivacyLedger
from zoo.privacy.barriers import check_finetunable
from zoo.release.hub import released_state_dict
from zoo.shapes import DataShapeError, check_model_fits_data


@dataclass(frozen=True)
class Reinitialised:
    """The layers of a model that did not come from its base, because the class counts differ."""

    base: str
    layers: tuple[str, ...]
    base_classes: int
    classes: int

    def sentence(self) -> str:
        return (
            f"Started from {self.base}, trained for {self.base_classes} classes: {', '.join(self.layers)} "
            f"re-initialised for the data's {self.classes} classes (its shape follows the class count), every "
            "other weight from the base."
        )


def check_base(base: DPGenerativeModel, data: Any, name: str) -> None:
    """What starting from a base checks before any work: its method can be fine-tuned, and it was built for the
    data's image shape (its class count may differ)."""
    check_finetunable(base)
    check_model_fits_data(
        base,
        data,
        f"start from {name}",
        "Start from a model of the data's image shape, or train a new one (dpzoo train FOLDER --method METHOD "
        "--epsilon E builds it for the folder's images and classes)",
        arguments=("image_shape",),
    )


def start_from(model: DPGenerativeModel, base: DPGenerativeModel, name: str) -> Reinitialised | None:
    """``model`` (``base`` itself, or the base's method built for the data) takes the base's released weights
    and ledger, so that training adds the new data's entries to it; the layers re-initialised are printed."""
    if base.method != model.method:
        raise DataShapeError(f"cannot start from {name}: it is a {base.method} model, not {model.method}")
    reinitialised = None if model is base else load_base(model, base, name)
    model.privacy_ledger = base.privacy_ledger
    if reinitialised:
        print(reinitialised.sentence())
    return reinitialised


def load_base(model: DPGenerativeModel, base: DPGenerativeModel, name: str) -> Reinitialised | None:
    """Load ``base``'s released weights into ``model`` (same method, built for the data): all of them when the
    class counts agree, all but the class-dependent layers (left as ``model`` initialised them) when not."""
    base_state, state = released_state_dict(base), released_state_dict(model)
    mismatched = sorted(key for key in state.keys() & base_state.keys() if state[key].shape != base_state[key].shape)
    explained = _class_dependent(base, model.num_classes) if base.num_classes != model.num_classes else set()
    if state.keys() != base_state.keys() or not set(mismatched) <= explained:
        raise DataShapeError(
            f"cannot start from {name}: its {', '.join(base.released_modules)} do not fit the model "
            f"({_differences(base, model) or 'other layers'}); set the model's architecture to the base's "
            "(see its config.json)"
        )
    layers = tuple(dict.fromkeys(key.rpartition(".")[0] for key in mismatched))
    merged = {key: state[key] if key.rpartition(".")[0] in layers else base_state[key] for key in state}
    for module in model.released_modules:
        prefix = f"{module}."
        model.get_submodule(module).load_state_dict(
            {k[len(prefix) :]: v for k, v in merged.items() if k.startswith(prefix)}
        )
    return Reinitialised(name, layers, base.num_classes, model.num_classes) if layers else None


def note_in_ledger(ledger: PrivacyLedger, since: int, reinitialised: Reinitialised) -> None:
    """State the re-initialisation in the notes of the entries a plan added (from entry ``since`` on)."""
    for entry in ledger.entries[since:]:
        entry.note = "; ".join(filter(None, [entry.note, reinitialised.sentence()]))


def _class_dependent(base: DPGenerativeModel, classes: int) -> set[str]:
    """The released tensors of ``base`` whose shape changes with its class count."""
    try:
        probe = type(base)(**base.with_data_arguments({"num_classes": classes}))
    except (TypeError, ValueError):
        return set()
    base_state, probe_state = released_state_dict(base), released_state_dict(probe)
    return {key for key in base_state.keys() & probe_state.keys() if base_state[key].shape != probe_state[key].shape}


def _differences(base: DPGenerativeModel, model: DPGenerativeModel) -> str:
    ours, theirs = model.architecture(), base.architecture()
    return ", ".join(
        f"{key}: {theirs.get(key)!r} in the base, {ours.get(key)!r} here"
        for key in sorted(ours.keys() | theirs.keys())
        if ours.get(key) != theirs.get(key)
    )
