"""Fine-tune a pretrained generator, privately, on new data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from zoo.loading import load
from zoo.privacy import DPCallback, PrivacyBarrier, PrivacyConfigError
from zoo.stages import train


def check_finetunable(model: Any) -> None:
    """Fine-tuning needs every module the barrier privatises to be in the release."""
    barrier = PrivacyBarrier(model.privacy_barrier)
    if barrier == PrivacyBarrier.ONE_SHOT_RELEASE:
        raise PrivacyConfigError(
            f"{model.method} releases one statistic of its data and fits a generator to it; there is no private "
            "step to continue. Train a new model on the new data with zoo.train (its own release)."
        )
    if barrier == PrivacyBarrier.PAC_NOISED_OUTPUT:
        raise PrivacyConfigError(
            f"{model.method} releases a PAC-noised output and no trained network; there is nothing to continue "
            "training. Run its recipe on the new data (its own PAC release)."
        )
    if barrier not in (PrivacyBarrier.PRIVATE_MODEL, PrivacyBarrier.PRIVATE_CRITIC):
        raise PrivacyConfigError(
            f"{model.method} uses barrier {barrier.value}: its private step needs modules that are never released "
            f"({', '.join(model.never_released) or 'the critics'}), so a checkpoint cannot be fine-tuned privately."
        )
    released = {id(m) for name in model.released_modules for m in getattr(model, name).modules()}
    missing = [type(m).__name__ for m in model.private_modules() if id(m) not in released]
    if missing:
        raise PrivacyConfigError(
            f"{model.method} trains {missing} privately but does not release them; it cannot be fine-tuned "
            "from a checkpoint."
        )


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
    """Train the model further under DPCallback on ``datamodule``'s private data.

    The model's ledger gains an entry for the new dataset; the guarantee for the data it
    was trained on before is unchanged (this is post-processing for that data). C defaults
    to the clipping bound of the model's last ledger entry. A model trained per class
    fine-tunes each class's model on that class of the new data, each at ``target_epsilon``
    (parallel composition again): the datamodule must offer ``for_class(label)``.
    """
    model = load(model_or_id) if isinstance(model_or_id, (str, Path)) else model_or_id
    check_finetunable(model)
    if max_grad_norm is None:
        max_grad_norm = model.privacy_ledger.entries[-1].clip_norm
    privacy = DPCallback(
        target_epsilon=target_epsilon,
        delta=delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        planned_steps=max_steps,
    )
    options = {"logger": False, "enable_checkpointing": False, "enable_model_summary": False, **trainer_kwargs}
    model.train()
    train(model, datamodule, privacy, max_steps=max_steps, **options)
    return model.eval()
