"""Training in stages with one ledger and one budget.

A method declares its stages (``DPGenerativeModel.stages``) and, when it is a composition of
parts trained on disjoint data (one model per class), its parts (``training_parts``);
:func:`train` runs them in order:

- :class:`Release` (B1): a statistic of the private data released once by the Gaussian
  mechanism, through the plan's :class:`~zoo.privacy.DPBudget`, which enters it in the ledger;
- :class:`PrivateSteps`: a Lightning fit under the budget's DPCallback on the private data (B2/B3/B4);
- :class:`PublicSteps`: a Lightning fit that never reads the private data (post-processing,
  e.g. fitting a generator to a released statistic); its steps receive their index only;
- :class:`HelperSteps`: a fit that trains never-released helpers on the private data without
  DP (their cost is accounted when private steps query them); the released modules must not change;
- :class:`PACRelease`: a mechanism's output released with noise calibrated by PAC privacy under a
  :class:`~zoo.privacy.PACBudget`. A plan is either DP or PAC, never both.

Public pretraining is a plan of its own (:func:`pretrain_public`, a method's ``public_stages``):
:class:`PublicStatistic` and :class:`PublicSteps` on data the user declared public
(:class:`~zoo.data.public.PublicData`), recorded in the ledger by name and fingerprint and charged
no (ε, δ). A private plan then continues from the pretrained weights and composes as always.

A private or helper stage with ``through_helpers=True`` does not draw batches: the module reads
the private data itself, each helper its own part (GS-WGAN's critics), so its steps receive their
index and ``trainer.datamodule.private`` is the datamodule (:class:`StepIndexData`).

σ is calibrated for the whole plan: stages with a fixed σ come first and the one calibrated
stage (a Release with ``calibrated=True``, or PrivateSteps under a DPBudget with a target ε)
comes last among the stages that spend budget, so it is calibrated against everything else.
Every Lightning checkpoint of a stage records which stage it is; ``train(..., ckpt_path=...)``
skips the stages before it and resumes that one.

Under DDP every rank runs the plan. A Release stage writes what it released into buffers, which
DDP broadcasts from rank 0 before every forward pass: only rank 0's release is ever used, saved
and in its ledger, and the other ranks' draws never leave their process.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import lightning_utilities.core.rank_zero as lightning_messages
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader

from zoo.data.public import PublicData
from zoo.privacy import Budget, DPBudget, DPCallback, PACBudget, PrivacyConfigError, PrivacyLedger
from zoo.privacy.callback import CHECKPOINT_KEY
from zoo.privacy.ledger import PublicDataUse

#: where a Lightning checkpoint records the stage it was written in
STAGE_KEY = "dpzoo_stage"


class PrivacyLedgerMixin:
    """For a LightningModule trained in stages: every checkpoint carries the privacy ledger and the
    stage it was written in, and ``load_from_checkpoint`` brings the ledger back with the weights,
    so further training on the same data composes with what was spent instead of starting from
    ε = 0 (``fit(ckpt_path=...)`` restores it too, also for stages without a DPCallback)."""

    #: set by :func:`train` while a stage runs: {"part", "stage", "name"}
    training_stage: dict[str, Any] | None = None
    #: what the model's training spent, and on which data; None until a plan, a load or a checkpoint sets it
    privacy_ledger: PrivacyLedger | None = None

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if self.privacy_ledger is not None:
            checkpoint.setdefault(CHECKPOINT_KEY, self.privacy_ledger.to_dict())
        if self.training_stage is not None:
            checkpoint[STAGE_KEY] = dict(self.training_stage)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        stored = checkpoint.get(CHECKPOINT_KEY)
        if stored is not None:
            self.privacy_ledger = PrivacyLedger.from_dict(stored)


@dataclass(frozen=True)
class Release:
    """B1: ``run(datamodule, budget)`` computes statistics of the private data and releases each
    through ``budget.release`` (a :class:`~zoo.privacy.DPBudget`). ``calibrated``: σ comes from the
    budget (else the stage fixes it)."""

    name: str
    run: Callable[[Any, DPBudget], None]
    calibrated: bool = False


@dataclass(frozen=True)
class PrivateSteps:
    """Lightning steps under DPCallback on the private data; ``max_steps`` None: the trainer's.
    ``through_helpers``: the steps receive their index and reach the data only through helpers."""

    name: str = "private training"
    max_steps: int | None = None
    through_helpers: bool = False


@dataclass(frozen=True)
class PublicSteps:
    """Lightning steps that never read the private data: ``training_step`` receives the step index."""

    name: str
    max_steps: int | None = None


@dataclass(frozen=True)
class PublicStatistic:
    """``run(public)`` computes a statistic of data the user declared public, without noise (only in
    :func:`pretrain_public`; the ledger records the data, no budget is spent)."""

    name: str
    run: Callable[[PublicData], None]


@dataclass(frozen=True)
class HelperSteps:
    """Lightning steps training never-released helpers on the private data without DP.
    ``through_helpers``: the steps receive their index and each helper reads its own part."""

    name: str
    max_steps: int | None = None
    through_helpers: bool = False


@dataclass(frozen=True)
class PACRelease:
    """``run(datamodule, budget)`` releases a mechanism's output through ``budget.release`` (a
    :class:`~zoo.privacy.PACBudget`), which calibrates the noise and enters it in the ledger."""

    name: str
    run: Callable[[Any, PACBudget], None]


class StepIndexData(pl.LightningDataModule):
    """Serves step indices 0..steps-1 for a stage whose module reads the private data itself
    (``private``); names that data for the ledger like the datamodule it wraps."""

    def __init__(self, private: Any, steps: int) -> None:
        super().__init__()
        self.private, self.steps = private, steps

    @property
    def dataset_id(self) -> str | None:
        return getattr(self.private, "dataset_id", None)

    @property
    def partition_of(self) -> str | None:
        return getattr(self.private, "partition_of", None)

    @property
    def records_identity(self) -> str | None:
        return getattr(self.private, "records_identity", None)

    def setup(self, stage: str) -> None:
        self.private.setup(stage)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(range(self.steps), batch_size=None)


Stage = Release | PrivateSteps | PublicSteps | HelperSteps | PACRelease | PublicStatistic


def train(
    model: Any,
    datamodule: Any,
    budget: Budget,
    *,
    callbacks: Sequence[pl.Callback] = (),
    ckpt_path: str | None = None,
    **trainer_options: Any,
) -> Any:
    """Run ``model``'s stages on ``datamodule`` (each part on its own data) with one ledger and one budget.

    ``budget`` (a :class:`~zoo.privacy.DPBudget`, or a :class:`~zoo.privacy.PACBudget` for a PAC-private
    plan) spends into the model's ledger; each private stage runs under ``budget.callback()``, and afterwards
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
    if not isinstance(getattr(model, "privacy_ledger", None), PrivacyLedger):
        model.privacy_ledger = PrivacyLedger()
    parts = model.training_parts(datamodule)
    resume = _resume_point(ckpt_path)
    if resume is not None and len(parts) > 1:
        raise PrivacyConfigError(
            "resuming from a checkpoint works for models trained in one part; a model trained per class cannot "
            "resume mid-plan yet (a checkpoint holds one part): restart its training."
        )
    for part_index, (part, data) in enumerate(parts):
        part.privacy_ledger = model.privacy_ledger  # one ledger: every part's entries land in the model's
        budget.bind(
            model.privacy_ledger,
            getattr(data, "dataset_id", None),
            getattr(data, "partition_of", None),
            getattr(data, "records_identity", None),
        )
        stages = part.stages(data)
        check_plan(stages, budget)
        for index, stage in enumerate(stages):
            if resume is not None and index < resume:
                continue
            part.training_stage = {"part": part_index, "stage": index, "name": stage.name}
            resume_here = ckpt_path if resume == index else None
            _run(stage, part, data, budget, list(callbacks), trainer_options, resume_here)
        part.training_stage = None
    return model


def pretrain_public(
    model: Any, public: PublicData, *, callbacks: Sequence[pl.Callback] = (), **trainer_options: Any
) -> Any:
    """Run ``model.public_stages(public)`` without noise on data the user declared public, and record the
    data in the model's ledger (no (ε, δ) charged); refused when its records may be ones the ledger protects.
    A later ``train`` or ``zoo.finetune`` on private data continues from the pretrained weights with its own
    budget."""
    if not isinstance(public, PublicData):
        raise PrivacyConfigError(
            "pretrain_public reads only data declared public: wrap it as zoo.data.PublicData(data, source='why it "
            f"is public'), got {type(public).__name__}"
        )
    stages = model.public_stages(public)
    private = [s.name for s in stages if not isinstance(s, (PublicStatistic, PublicSteps))]
    if private:
        raise PrivacyConfigError(f"public pretraining may only run public stages; {private} are private")
    if not isinstance(getattr(model, "privacy_ledger", None), PrivacyLedger):
        model.privacy_ledger = PrivacyLedger()
    model.privacy_ledger.check_public_use(public.dataset_id, public.records_identity)
    public.setup("fit")
    for index, stage in enumerate(stages):
        model.training_stage = {"part": 0, "stage": index, "name": stage.name}
        if isinstance(stage, PublicStatistic):
            stage.run(public)
        else:
            _run(stage, model, public, None, list(callbacks), trainer_options, None)
    model.training_stage = None
    stage_names = "; ".join(stage.name for stage in stages)
    model.privacy_ledger.public_data.append(
        PublicDataUse(public.dataset_id, len(public.train_set), public.source, stage_names, public.records_identity)
    )
    return model


def check_plan(stages: Sequence[Stage], budget: Budget) -> None:
    """A PAC budget runs PAC releases only and a DP budget never runs one; at most one calibrated
    stage, and no stage after it spends budget: it is calibrated against everything else the plan spends.
    Statistics of public data belong to public pretraining (``pretrain_public``), not to a private plan."""
    public = [s.name for s in stages if isinstance(s, PublicStatistic)]
    if public:
        raise PrivacyConfigError(f"stages {public} read public data: run them with pretrain_public")
    pac_stages = [s.name for s in stages if isinstance(s, PACRelease)]
    if isinstance(budget, PACBudget):
        spending = [s.name for s in stages if isinstance(s, (Release, PrivateSteps, HelperSteps))]
        if spending or not pac_stages:
            raise PrivacyConfigError(
                f"a PACBudget runs PAC releases only; this plan has {spending or 'no PAC release'}: "
                "train it under a DPBudget"
            )
        return
    if pac_stages:
        raise PrivacyConfigError(
            f"stages {pac_stages} release under PAC privacy: give the plan a zoo.privacy.PACBudget, "
            "not a DPBudget (the two notions never compose)"
        )
    calibrated = [i for i, s in enumerate(stages) if _calibrated(s, budget)]
    spending = [i for i, s in enumerate(stages) if isinstance(s, (Release, PrivateSteps))]
    if len(calibrated) > 1:
        names = [stages[i].name for i in calibrated]
        raise PrivacyConfigError(f"one stage of a plan can be calibrated to the target ε, not {names}")
    if calibrated and spending[-1] != calibrated[0]:
        raise PrivacyConfigError(
            f"stage {stages[spending[-1]].name!r} spends budget after the calibrated stage "
            f"{stages[calibrated[0]].name!r}; put fixed-σ stages first"
        )


def _calibrated(stage: Stage, budget: DPBudget) -> bool:
    if isinstance(stage, Release):
        return stage.calibrated
    return isinstance(stage, PrivateSteps) and budget.target_epsilon is not None


def _resume_point(ckpt_path: str | None) -> int | None:
    if ckpt_path is None:
        return None
    stage = torch.load(ckpt_path, map_location="cpu", weights_only=False).get(STAGE_KEY)
    if stage is None:
        raise PrivacyConfigError(f"{ckpt_path} was not written during a stage of zoo.stages.train; cannot resume it")
    return int(stage["stage"])


class _NoTips(logging.Filter):
    """Lightning's "💡 Tip:" advertisements (litlogger, litmodels), which every Trainer of a plan would print."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("💡 Tip:")


@contextlib.contextmanager
def without_lightning_tips() -> Iterator[None]:
    """Build and run Trainers without Lightning's tips (they tell a user of a plan nothing, once per Trainer)."""
    tips = _NoTips()
    lightning_messages.log.addFilter(tips)
    try:
        yield
    finally:
        lightning_messages.log.removeFilter(tips)


@without_lightning_tips()  # a fresh context per call (contextlib's context managers decorate)
def _run(
    stage: Stage,
    model: Any,
    datamodule: Any,
    budget: Budget | None,
    callbacks: list[pl.Callback],
    options: dict[str, Any],
    ckpt_path: str | None,
) -> None:
    if isinstance(stage, (Release, PACRelease)):
        stage.run(datamodule, budget)
        return
    if stage.max_steps is not None:
        options = {**options, "max_steps": stage.max_steps}
    if isinstance(stage, PublicSteps):
        loader = DataLoader(range(_planned_steps(stage, options)), batch_size=None)
        pl.Trainer(callbacks=callbacks, **options).fit(model, train_dataloaders=loader, ckpt_path=ckpt_path)
        return
    if stage.through_helpers:
        datamodule = StepIndexData(datamodule, _planned_steps(stage, options))
    if isinstance(stage, PrivateSteps):
        pl.Trainer(callbacks=[*callbacks, budget.callback()], **options).fit(model, datamodule, ckpt_path=ckpt_path)
    else:
        released = _released_state(model)
        pl.Trainer(callbacks=callbacks, **options).fit(model, datamodule, ckpt_path=ckpt_path)
        _check_unchanged(released, _released_state(model), stage.name)


def _planned_steps(stage: Stage, options: dict[str, Any]) -> int:
    steps = options.get("max_steps", -1)
    if steps is None or steps < 1:
        raise PrivacyConfigError(f"stage {stage.name!r} serves step indices and needs max_steps")
    return int(steps)


def _released_state(model: Any) -> dict[str, Tensor]:
    return {
        f"{name}.{key}": value.detach().clone()
        for name in model.released_modules
        for key, value in getattr(model, name).state_dict().items()
    }


def _check_unchanged(before: dict[str, Tensor], after: dict[str, Tensor], stage: str) -> None:
    changed = [key for key, value in before.items() if not torch.equal(value, after[key])]
    if changed:
        raise PrivacyConfigError(
            f"helper stage {stage!r} trained without DP but changed released weights {changed[:5]}: only "
            "never-released helpers may learn from private data outside a private stage"
        )
