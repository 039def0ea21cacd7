"""Running a method's plan with one ledger and one budget (``zoo.train``), and public pretraining
(``zoo.pretrain_public``).

:func:`train` runs each part's stages (``zoo.stages``; one part per disjoint share of the data for a
composition, one model per class) in order, every stage spending through the one budget. Public
pretraining is a plan of its own (:func:`pretrain_public`, a method's ``public_stages``) on data the user
declared public (:class:`~zoo.data.public.PublicData`), recorded in the ledger by name and fingerprint and
charged no (ε, δ); a private plan then continues from the pretrained weights and composes as always.

``train(..., ckpt_path=...)`` skips the stages before the one a checkpoint was written in and resumes that
one; the checkpoint is loaded as tensors and plain data only (``weights_only=True``).

Under DDP every rank runs the plan. A Release stage writes what it released into buffers, which
DDP broadcasts from rank 0 before every forward pass: only rank 0's release is ever used, saved
and in its ledger, and the other ranks' draws never leave their process.
"""

from __future__ import annotations

import contextlib
import io
import logging
import pickle
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import lightning_utilities.core.rank_zero as lightning_messages
import pytorch_lightning as pl
import torch
from torch import Tensor

from zoo.data.public import PublicData
from zoo.errors import MissingFileError, UserError
from zoo.methods import DPGenerativeModel
from zoo.privacy import Budget, DPCallback, PrivacyConfigError, PrivacyLedger
from zoo.privacy.callback import CHECKPOINT_KEY
from zoo.privacy.ddp import check_buffer_sync
from zoo.privacy.ledger import PublicDataUse
from zoo.privacy.precision import refuse_float16_loss_scaling
from zoo.privacy.private_data import DeclaredPrivateData
from zoo.stages import (
    STAGE_KEY,
    PACRelease,
    PrivateSteps,
    PublicStatistic,
    PublicSteps,
    Release,
    ResumedEpochProgress,
    Stage,
    StepIndexData,
    check_plan,
    step_index_loader,
    without_lightning_tips,
)

#: a Trainer that logs, checkpoints and prints nothing of its own (timings, device probes, audits)
QUIET_TRAINER = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)


@contextlib.contextmanager
def quiet_lightning() -> Iterator[None]:
    """No Lightning messages, warnings or progress bars from a run that serves a measurement, not the user
    (``zoo.estimate``'s stand-in run, the canary audits)."""
    level = lightning_messages.log.level
    lightning_messages.log.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        lightning_messages.log.setLevel(level)


def train(
    model: DPGenerativeModel,
    datamodule: pl.LightningDataModule,
    budget: Budget,
    *,
    callbacks: Sequence[pl.Callback] = (),
    ckpt_path: str | None = None,
    **trainer_options: Any,
) -> DPGenerativeModel:
    """Run ``model``'s stages on ``datamodule`` (each part on its own data) with one ledger and one budget.

    ``budget`` (a :class:`~zoo.privacy.DPBudget`, or a :class:`~zoo.privacy.PACBudget` for a PAC-private
    plan) spends into the model's ledger; each private stage runs under ``DPCallback(budget)``, and afterwards
    ``budget.ledger`` is the plan's and ``budget.epsilon_spent`` the ε on its data. ``callbacks`` and
    ``trainer_options`` (``max_steps``, ``accelerator``, ...) build each stage's Trainer."""
    if isinstance(budget, DPCallback):
        raise PrivacyConfigError(
            "train takes the plan's budget, zoo.privacy.DPBudget(...) with the same arguments: a DPCallback is "
            "one stage's Lightning callback (train builds one per private stage from the budget)"
        )
    if not isinstance(budget, Budget):
        raise PrivacyConfigError(
            f"train needs the plan's budget as a zoo.privacy.DPBudget (or PACBudget), got {type(budget).__name__}"
        )
    refuse_float16_loss_scaling(trainer_options.get("precision"))  # before the helpers' pretraining
    check_buffer_sync(trainer_options.get("strategy"))  # a release's buffers must reach every rank
    if not isinstance(model.privacy_ledger, PrivacyLedger):
        model.privacy_ledger = PrivacyLedger()
    parts = model.training_parts(datamodule)
    resumed = _resumed_checkpoint(ckpt_path)
    earlier_entries = len(model.privacy_ledger.entries)
    resume = None if resumed is None else int(resumed[STAGE_KEY]["stage"])
    if resume is not None and len(parts) > 1:
        raise PrivacyConfigError(
            "resuming from a checkpoint works for models trained in one part; a model trained per class cannot "
            "resume mid-plan yet (a checkpoint holds one part): restart its training."
        )
    for part_index, (part, data) in enumerate(parts):
        part.privacy_ledger = model.privacy_ledger  # one ledger: every part's entries land in the model's
        declared = DeclaredPrivateData(data)
        budget.bind(model.privacy_ledger, declared.dataset_id, declared.partition_of, declared.records_identity)
        run = _run_facts(budget)
        if resumed is not None:
            _check_same_run(resumed, run, ckpt_path, earlier_entries)
        stages = part.stages(data)
        check_plan(stages, budget)
        for index, stage in enumerate(stages):
            if resume is not None and index < resume:
                continue
            part.training_stage = {"part": part_index, "stage": index, "name": stage.name, "run": run}
            resume_here = ckpt_path if resume == index else None
            _run(stage, part, data, budget, list(callbacks), trainer_options, resume_here)
        part.training_stage = None
    return model


def pretrain_public(
    model: DPGenerativeModel,
    public: PublicData,
    *,
    callbacks: Sequence[pl.Callback] = (),
    ckpt_path: str | None = None,
    **trainer_options: Any,
) -> DPGenerativeModel:
    """Run ``model.public_stages(public)`` without noise on data the user declared public, and record the
    data in the model's ledger (no (ε, δ) charged); refused when its records may be ones the ledger protects.
    A later ``train`` or ``zoo.finetune`` on private data continues from the pretrained weights with its own
    budget. ``ckpt_path`` resumes the step stage a checkpoint was written in; a public statistic before it is
    computed again (it is exact, so the run ends as an uninterrupted one would)."""
    if not isinstance(public, PublicData):
        raise PrivacyConfigError(
            "pretrain_public reads only data declared public: wrap it as zoo.data.PublicData(data, source='why it "
            f"is public'), got {type(public).__name__}"
        )
    stages = model.public_stages(public)
    private = [s.name for s in stages if not isinstance(s, (PublicStatistic, PublicSteps))]
    if private:
        raise PrivacyConfigError(f"public pretraining may only run public stages; {private} are private")
    if not isinstance(model.privacy_ledger, PrivacyLedger):
        model.privacy_ledger = PrivacyLedger()
    model.privacy_ledger.check_public_use(public.dataset_id, public.records_identity, public.assume_disjoint)
    resumed = _resumed_checkpoint(ckpt_path)
    resume = None if resumed is None else int(resumed[STAGE_KEY]["stage"])
    public.setup("fit")
    for index, stage in enumerate(stages):
        model.training_stage = {"part": 0, "stage": index, "name": stage.name}
        if isinstance(stage, PublicStatistic):
            stage.run(public)
        elif resume is None or index >= resume:
            resume_here = ckpt_path if resume == index else None
            _run(stage, model, public, None, list(callbacks), trainer_options, resume_here)
    model.training_stage = None
    stage_names = "; ".join(stage.name for stage in stages)
    model.privacy_ledger.public_data.append(
        PublicDataUse(
            public.dataset_id,
            len(public.train_set),
            public.source,
            stage_names,
            public.records_identity,
            assumed_disjoint=public.assume_disjoint,
        )
    )
    return model


class CheckpointRefused(UserError):
    """A Lightning checkpoint that cannot be loaded as tensors and plain data."""


def _resumed_checkpoint(ckpt_path: str | None) -> dict[str, Any] | None:
    """The stage (``STAGE_KEY``) and ledger (``CHECKPOINT_KEY``) a Lightning checkpoint of ``zoo.train`` holds;
    None without a checkpoint."""
    if ckpt_path is None:
        return None
    if not Path(ckpt_path).is_file():
        raise MissingFileError(f"no checkpoint at {ckpt_path}")
    try:  # tensors and plain data only: a checkpoint file never runs code here
        checkpoint = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        raise CheckpointRefused(
            f"{ckpt_path} holds Python objects beyond tensors and plain data, which dpzoo does not unpickle "
            f"(torch.load with weights_only=True); resume from a checkpoint that zoo.train wrote ({error})"
        ) from None
    if checkpoint.get(STAGE_KEY) is None:
        raise PrivacyConfigError(f"{ckpt_path} was not written during a stage of zoo.train; cannot resume it")
    return {STAGE_KEY: checkpoint[STAGE_KEY], CHECKPOINT_KEY: checkpoint.get(CHECKPOINT_KEY)}


def _run_facts(budget: Budget) -> dict[str, Any]:
    """What a resumed run must share with the run that wrote its checkpoint: the data (its id and records) and
    the guarantee asked for."""
    return {
        "dataset_id": budget.protected,
        "records_identity": budget.records_identity,
        "target_epsilon": getattr(budget, "target_epsilon", None),
        "delta": getattr(budget, "delta", None),
    }


def _check_same_run(resumed: dict[str, Any], run: dict[str, Any], ckpt_path: str | None, earlier_entries: int) -> None:
    """Refuse to resume onto other data or another (ε, δ): the checkpoint's releases were spent on its data, and
    the card would name the new data beside a guarantee for the old. Compares what the checkpoint recorded: the
    run it was written in (``training_stage["run"]``), else the main one of the plan's ledger entries, those after
    the ``earlier_entries`` the model held before the plan (older checkpoints)."""
    recorded = resumed[STAGE_KEY].get("run")
    if recorded is None and resumed[CHECKPOINT_KEY]:
        plan = PrivacyLedger(PrivacyLedger.from_dict(resumed[CHECKPOINT_KEY]).entries[earlier_entries:])
        recorded = {key: getattr(plan.main_entry(), key) for key in run} if plan.entries else None
    differing = [key for key in run if recorded is not None and recorded.get(key) != run[key]]
    if differing:
        spelled = "; ".join(f"{key}: {recorded[key]} in the checkpoint, {run[key]} now" for key in differing)
        raise PrivacyConfigError(
            f"{ckpt_path} was written by a run on other data or for another guarantee ({spelled}): resuming would "
            "continue its releases under this run's name. Resume with the data and budget it was written with, or "
            "start a new run without the checkpoint"
        )


@without_lightning_tips()  # a fresh context per call (contextlib's context managers decorate)
def _run(
    stage: Stage,
    model: DPGenerativeModel,
    datamodule: pl.LightningDataModule,
    budget: Budget | None,
    callbacks: list[pl.Callback],
    options: dict[str, Any],
    ckpt_path: str | None,
) -> None:
    if isinstance(stage, PACRelease):  # a whole training inside the mechanism: on the run's device
        model.to(_run_device(options))
        try:
            stage.run(datamodule, budget)
        finally:
            model.cpu()
        return
    if isinstance(stage, Release):
        stage.run(datamodule, budget)
        return
    if stage.max_steps is not None:
        options = {**options, "max_steps": stage.max_steps}
    callbacks = [*callbacks, ResumedEpochProgress()]
    if isinstance(stage, PublicSteps):
        trainer = pl.Trainer(callbacks=callbacks, **options)
        trainer.fit(
            model, train_dataloaders=step_index_loader(_planned_steps(stage, options), trainer), ckpt_path=ckpt_path
        )
        return
    if stage.through_helpers:
        datamodule = StepIndexData(datamodule, _planned_steps(stage, options))
    if isinstance(stage, PrivateSteps):
        pl.Trainer(callbacks=[*callbacks, DPCallback(budget)], **options).fit(model, datamodule, ckpt_path=ckpt_path)
    else:
        released = _released_state(model)
        pl.Trainer(callbacks=callbacks, **options).fit(model, datamodule, ckpt_path=ckpt_path)
        _check_unchanged(released, _released_state(model), stage.name)


def _run_device(options: dict[str, Any]) -> torch.device:
    """The device a Trainer built from ``options`` trains on (its accelerator and devices resolved as Lightning
    does), for a stage that runs outside a Trainer."""
    return pl.Trainer(**{**options, **QUIET_TRAINER}).strategy.root_device


def _planned_steps(stage: Stage, options: dict[str, Any]) -> int:
    steps = options.get("max_steps", -1)
    if steps is None or steps < 1:
        raise PrivacyConfigError(f"stage {stage.name!r} serves step indices and needs max_steps")
    return int(steps)


def _released_state(model: DPGenerativeModel) -> dict[str, Tensor]:
    return {
        f"{name}.{key}": value.detach().clone()
        for name in model.released_modules
        for key, value in model.get_submodule(name).state_dict().items()
    }


def _check_unchanged(before: dict[str, Tensor], after: dict[str, Tensor], stage: str) -> None:
    changed = [key for key, value in before.items() if not torch.equal(value, after[key])]
    if changed:
        raise PrivacyConfigError(
            f"helper stage {stage!r} trained without DP but changed released weights {changed[:5]}: only "
            "never-released helpers may learn from private data outside a private stage"
        )
