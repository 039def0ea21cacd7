"""Fine-tune a pretrained generator, privately, on new data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from zoo.base_weights import check_base, note_in_ledger, start_from
from zoo.methods import DPGenerativeModel
from zoo.privacy import DPBudget
from zoo.privacy.parameters import DEFAULT_DELTA
from zoo.release.loading import load
from zoo.shapes import model_for_data
from zoo.training import train


def finetune(
    model_or_id: DPGenerativeModel | str | Path,
    datamodule: pl.LightningDataModule,
    target_epsilon: float,
    delta: float = DEFAULT_DELTA,
    max_steps: int = 300,
    max_grad_norm: float | None = None,
    accountant: str = "prv",
    *,
    assume_disjoint: bool = False,
    **trainer_kwargs: Any,
) -> DPGenerativeModel:
    """Train the model further under a fresh DPBudget on ``datamodule``'s private data.

    The model's ledger gains an entry for the new dataset; the guarantee for the data it
    was trained on before is unchanged (this is post-processing for that data), unless the new
    data shares records with it (another split of the same images): the ledger then composes
    the entries of both (``PrivacyLedger.guarantees``). A method that
    releases statistics (DP-MERF, DP-Kernel) runs its plan on the new data: fresh releases, and
    the generator refitted from its current weights (``max_steps`` fitting steps), as from a base
    pretrained on public data (``zoo.pretrain_public``). C defaults to the clipping bound of the
    model's last ledger entry. A model trained per class
    fine-tunes each class's model on that class of the new data, each at ``target_epsilon``
    (parallel composition again): the datamodule must offer ``for_class(label)``.

    Data with another number of classes than the model's gets a new model: the model's weights but for
    the layers whose shape follows the class count, which start afresh (``zoo.base_weights``; printed,
    and noted in the new ledger entries). The image shape must be the model's.

    ``assume_disjoint``: your statement that ``datamodule`` shares no record with the public data the model was
    pretrained on, where this machine cannot show it (a downloaded base); the card states it
    (``DPBudget(assume_disjoint=True)``).
    """
    base = load(model_or_id) if isinstance(model_or_id, (str, Path)) else model_or_id
    name = str(model_or_id) if isinstance(model_or_id, (str, Path)) else f"the given {base.method} model"
    check_base(base, datamodule, name)
    model = model_for_data(base, datamodule)
    reinitialised = start_from(model, base, name)
    since = len(model.privacy_ledger.entries)
    if max_grad_norm is None:  # a base pretrained on public data only has no entry: C = 1 (releases ignore it)
        entries = model.privacy_ledger.entries
        max_grad_norm = entries[-1].clip_norm if entries else 1.0
    budget = DPBudget(
        target_epsilon=target_epsilon,
        delta=delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        planned_steps=max_steps,
        assume_disjoint=assume_disjoint,
    )
    options = {"logger": False, "enable_checkpointing": False, "enable_model_summary": False, **trainer_kwargs}
    model.train()
    train(model, datamodule, budget, max_steps=max_steps, **options)
    if reinitialised:
        note_in_ledger(model.privacy_ledger, since, reinitialised)
    return model.eval()
