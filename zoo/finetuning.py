"""Fine-tune a pretrained generator, privately, on new data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from zoo.loading import load
from zoo.privacy import DPBudget
from zoo.privacy.barriers import check_finetunable
from zoo.shapes import check_model_fits_data
from zoo.stages import train


def finetune(
    model_or_id: Any,
    datamodule: pl.LightningDataModule,
    target_epsilon: float,
    delta: float = 1e-5,
    max_steps: int = 300,
    max_grad_norm: float | None = None,
    accountant: str = "prv",
    **trainer_kwargs: Any,
) -> Any:
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
    """
    model = load(model_or_id) if isinstance(model_or_id, (str, Path)) else model_or_id
    check_finetunable(model)
    check_model_fits_data(
        model,
        datamodule,
        "fine-tune",
        "Train a new model on this data from a recipe instead (dpzoo fit --config configs/<recipe>.yaml "
        "--images PATH builds the model for the folder's images and classes)",
    )
    if max_grad_norm is None:  # a base pretrained on public data only has no entry: C = 1 (releases ignore it)
        entries = model.privacy_ledger.entries
        max_grad_norm = entries[-1].clip_norm if entries else 1.0
    budget = DPBudget(
        target_epsilon=target_epsilon,
        delta=delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        planned_steps=max_steps,
    )
    options = {"logger": False, "enable_checkpointing": False, "enable_model_summary": False, **trainer_kwargs}
    model.train()
    train(model, datamodule, budget, max_steps=max_steps, **options)
    return model.eval()
