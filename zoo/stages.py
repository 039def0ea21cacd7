"""The stages a method's plan is made of, and what every checkpoint of a stage carries.

A method declares its stages (``DPGenerativeModel.stages``); ``zoo.training.train`` runs them in order:

- :class:`Release` (B1): a statistic of the private data released once by the Gaussian
  mechanism, through the plan's :class:`~zoo.privacy.DPBudget`, which enters it in the ledger;
- :class:`PrivateSteps`: a Lightning fit under the budget's DPCallback on the private data (B2/B3/B4);
- :class:`PublicSteps`: a Lightning fit that never reads the private data (post-processing,
  e.g. fitting a generator to a released statistic); its steps receive their index only;
- :class:`HelperSteps`: a fit that trains never-released helpers on the private data without
  DP (their cost is accounted when private steps query them); the released modules must not change;
- :class:`PACRelease`: a mechanism's output released with noise calibrated by PAC privacy under a
  :class:`~zoo.privacy.PACBudget`. A plan is either DP or PAC, never both;
- :class:`PublicStatistic` and :class:`PublicSteps` on data the user declared public make up a public
  pretraining plan (``zoo.training.pretrain_public``).

A private or helper stage with ``through_helpers=True`` does not draw batches: the module reads
the private data itself, each helper its own part (GS-WGAN's critics), so its steps receive their
index and ``trainer.datamodule.private`` is the datamodule (:class:`StepIndexData`).

σ is calibrated for the whole plan: stages with a fixed σ come first and the one calibrated
stage (a Release with ``calibrated=True``, or PrivateSteps under a DPBudget with a target ε)
comes last among the stages that spend budget, so it is calibrated against everything else
(:func:`check_plan`). Every Lightning checkpoint of a stage records which stage it is (``STAGE_KEY``,
:class:`PrivacyLedgerMixin`), so that a plan resumes mid-way.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import lightning_utilities.core.rank_zero as lightning_messages
import pytorch_lightning as pl
from torch.utils.data import DataLoader, Sampler

from zoo.data.public import PublicData
from zoo.privacy import Budget, DPBudget, PACBudget, PrivacyConfigError, PrivacyLedger
from zoo.privacy.callback import CHECKPOINT_KEY
from zoo.privacy.private_data import DeclaredPrivateData

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
        self._declared = DeclaredPrivateData(private)

    @property
    def dataset_id(self) -> str | None:
        return self._declared.dataset_id

    @property
    def partition_of(self) -> str | None:
        return self._declared.partition_of

    @property
    def records_identity(self) -> str | None:
        return self._declared.records_identity

    def setup(self, stage: str) -> None:
        self.private.setup(stage)

    def train_dataloader(self) -> DataLoader:
        return step_index_loader(self.steps, self.trainer)


class _RemainingSteps(Sampler[int]):
    """The step indices a fit has not run yet: from the batches its trainer has processed (restored from a
    checkpoint on resume) to ``steps - 1``. Its length stays the whole plan's, as Lightning counts a resumed
    epoch's batches from the epoch's start."""

    def __init__(self, steps: int, trainer: pl.Trainer) -> None:
        self.steps, self.trainer = steps, trainer

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[int]:
        done = self.trainer.fit_loop.epoch_loop.batch_progress.current.processed
        return iter(range(done, self.steps))


def step_index_loader(steps: int, trainer: pl.Trainer) -> DataLoader:
    """Step indices 0..steps-1 for ``trainer``'s fit, continuing where a resumed fit stopped: a method that
    draws its public schedule or helper randomness from the index must not repeat the steps it already ran."""
    return DataLoader(range(steps), batch_size=None, sampler=_RemainingSteps(steps, trainer))


Stage = Release | PrivateSteps | PublicSteps | HelperSteps | PACRelease | PublicStatistic


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


class ResumedEpochProgress(pl.Callback):
    """Gives a fit resumed mid-epoch its progress bar back. Lightning skips ``on_train_epoch_start`` when it
    restarts inside an epoch, and the bar is left as "Training: n/?" with no total and no ETA; a resumed
    long fit (every stage is one epoch of ``max_steps`` batches) is where the ETA matters most. On the first
    batch, the bar gets its total and description, and counts from the batches already run, so that its rate
    is that of this run."""

    def __init__(self) -> None:
        self._pending = True

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *_: Any) -> None:
        if not self._pending:
            return
        self._pending = False
        bar = trainer.progress_bar_callback
        if not (trainer.fit_loop.restarted_mid_epoch and isinstance(bar, pl.callbacks.TQDMProgressBar)):
            return
        bar.on_train_epoch_start(trainer, pl_module)  # Lightning's total here counts the remaining steps only
        done = trainer.fit_loop.epoch_loop.batch_progress.current.processed
        remaining = trainer.num_training_batches - done
        if trainer.max_steps > 0:
            remaining = min(remaining, trainer.max_steps - trainer.global_step)
        progress = bar.train_progress_bar
        progress.total = None if math.isinf(remaining) else done + int(remaining)
        progress.initial = progress.n = done
