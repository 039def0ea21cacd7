"""``dpzoo fit``'s core: run a recipe's objects (``zoo.recipe_cli.Recipe``) by running the method's stages
(``zoo.training.train``) under the budget of the recipe's ``privacy:`` block (a ``zoo.privacy.DPBudget``, or
``PACBudget``), and write the result in Hub layout where its ``zoo.run_plan.RunOptions`` say, with the
``Provenance`` its front end gives (``dpzoo fit``: its command line, ``zoo.cli``; ``dpzoo train``: its request,
``zoo.folder_training``). No command line is read here.

``per_class: K`` (``--per_class``) trains one model per class 0..K-1, each on its own partition, released as one
class-conditional model (parallel composition). A recipe whose data is declared public (``zoo.data.PublicData``)
pretrains a base without noise (``zoo.training.pretrain_public``); ``init_from`` starts a private recipe from such
a base, or any fine-tunable model.

Any image recipe runs on a folder of your own images (``--images PATH``): the model is built for
the data's image shape and class count (``zoo.shapes``) unless the command line sets them, and the saved
model records the folder's description (``ImageFolderDataModule.card_data``).

Ctrl-C ends a run in one line (``TrainingInterrupted``): during a stage's training steps it stops after the step,
saving a Lightning checkpoint beside the model folder (``<save_pretrained>.interrupted.ckpt``) and the whole plan
as a recipe (``.interrupted.yaml``: ``Recipe.plan`` with the run's options), and printing the ``dpzoo fit``
command that resumes it from both (``--ckpt_path``, ``zoo.training``: no stage before it is run again, so nothing
is spent twice); anywhere else it stops at once, and nothing is saved.

Under DDP (``--trainer.strategy ddp --trainer.devices N``) Lightning re-runs the whole command in every
process: every rank trains, and only global rank 0 saves and prints (:func:`say`); the other ranks
return the model they trained without writing anything. Ctrl-C then stops at once on every rank."""

from __future__ import annotations

import copy
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import yaml
from pytorch_lightning import Callback, LightningDataModule, LightningModule, Trainer
from pytorch_lightning.utilities import rank_zero_only

from zoo.base_weights import check_base, note_in_ledger, start_from
from zoo.methods import DPGenerativeModel, method_class
from zoo.privacy import Budget
from zoo.privacy.ddp import check_buffer_sync
from zoo.recipe_cli import Recipe
from zoo.release.hub import build_config, check_save_target, write_model_folder
from zoo.release.loading import load
from zoo.run_plan import Provenance, RunOptions
from zoo.shapes import DataShapeError, data_arguments_of, model_for_data
from zoo.training import pretrain_public, train

#: what ``run_recipe`` calls once the model is built for the data, before any training:
#: ``(model, datamodule, budget or None, trainer options)``
BeforeTraining = Callable[[DPGenerativeModel, LightningDataModule, "Budget | None", dict[str, Any]], None]


@rank_zero_only
def say(*lines: str) -> None:
    """Print on global rank 0 only: under DDP every rank runs the command, and one says what it did."""
    print(*lines, sep="\n", flush=True)


class TrainingInterrupted(BaseException):
    """Ctrl-C during ``run_recipe``, in one line: what was saved and how to resume. A BaseException, as
    KeyboardInterrupt is, so that no ``except Exception`` (the estimate's) goes on after it; not a KeyboardInterrupt,
    which Lightning answers with its own shutdown message and exit status."""


class Interruption(Callback):
    """SIGINT while ``run_recipe`` runs (a context manager around it, and a callback of every stage's Trainer).

    During a stage's training steps the first Ctrl-C is kept until the step ends: the next step's start saves a
    Lightning checkpoint (weights, optimiser, loops, ledger and stage: each step's ε is counted before its update,
    so they agree) and the ``plan`` it belongs to as a recipe beside it, and stops the whole plan; a second Ctrl-C
    stops at once. Anywhere else (the estimate, a Release stage, saving), or without a ``checkpoint`` path, or
    under DDP, it stops at once and saves nothing."""

    def __init__(self, checkpoint: Path | None = None, plan: Mapping[str, Any] | None = None) -> None:
        self.checkpoint, self.plan = checkpoint, plan
        self.stepping = self.requested = False
        #: why a run that saves its model keeps no checkpoint, said when it is interrupted
        self.unsaved = ""
        self._previous: Any = None

    def __enter__(self) -> Interruption:
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.stepping and not self.requested:
            self.requested = True
            print(
                "stopping after this step to save a checkpoint (Ctrl-C again stops at once, saving nothing)",
                file=sys.stderr,
                flush=True,
            )
            return
        again = "interrupted again: stopped at once" if self.requested else "interrupted"
        raise TrainingInterrupted(f"{again}; nothing was saved" + (f" ({self.unsaved})" if self.unsaved else ""))

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.stepping = self.checkpoint is not None and trainer.world_size == 1

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.stepping = False

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        self.stepping = False

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        if not self.requested:
            return
        assert self.checkpoint is not None and self.plan is not None
        trainer.save_checkpoint(self.checkpoint, weights_only=False)  # optimiser, loops and callbacks too
        recipe = self.checkpoint.with_suffix(".yaml")
        recipe.write_text(yaml.safe_dump(dict(self.plan), sort_keys=False, allow_unicode=True))
        raise TrainingInterrupted(
            f"interrupted after step {trainer.global_step}: saved {self.checkpoint} and its plan {recipe}; resume "
            f"with {resume_command(self.checkpoint)}"
        )


def interrupted_checkpoint(save_pretrained: str | Path) -> Path:
    """Where an interrupted run that would save its model in ``save_pretrained`` keeps its checkpoint (and, as
    ``.yaml``, its plan): beside it, never inside (the model folder holds a model's files only,
    ``zoo.release.save_target``)."""
    folder = Path(save_pretrained).absolute()
    return folder.with_name(f"{folder.name}.interrupted.ckpt")


def resume_command(checkpoint: Path) -> str:
    """The command that resumes the interrupted run saved at ``checkpoint`` (its plan beside it, as ``.yaml``)."""
    recipe = checkpoint.with_suffix(".yaml")
    return f"dpzoo fit --config {shlex.quote(str(recipe))} --ckpt_path {shlex.quote(str(checkpoint))}"


@dataclass(frozen=True)
class TrainedRun:
    """What ``run_recipe`` trained, and where it saved it with what config.json (None: not saved, or not on this
    rank), so that a front end reads nothing back that the run just wrote."""

    model: DPGenerativeModel
    folder: Path | None = None
    config: dict[str, Any] | None = None


def run_recipe(
    recipe: Recipe,
    options: RunOptions,
    provenance: Provenance,
    before_training: BeforeTraining | None = None,
) -> TrainedRun:
    """Train ``recipe``'s model on its data under its budget (public data: pretrain without one), starting from
    ``options.init_from`` or resuming ``options.ckpt_path`` where given, and save it in ``options.save_pretrained``
    (if given) with ``provenance`` on its card. Every check that needs no training (the save
    target, DDP's buffers, the model against the data, the base) comes before any. Ctrl-C raises
    ``TrainingInterrupted`` (the module docstring)."""
    with Interruption() as interruption:
        check_buffer_sync(recipe.trainer_options.get("strategy"))
        if options.save_pretrained:
            check_save_target(options.save_pretrained, overwrite=options.overwrite)
            if recipe.per_class:
                interruption.unsaved = "a model trained per class cannot resume mid-plan yet"  # zoo.training
            else:
                interruption.checkpoint = interrupted_checkpoint(options.save_pretrained)
                interruption.plan = _resumable_plan(recipe, options, provenance)
        model = _model_for_data(recipe)
        reinitialised = None
        if options.init_from:
            base = load(options.init_from)
            check_base(base, recipe.data, options.init_from)
            reinitialised = start_from(model, base, options.init_from)
        since = len(model.privacy_ledger.entries) if model.privacy_ledger else 0
        if before_training is not None:
            before_training(model, recipe.data, recipe.budget, recipe.trainer_options)
        if recipe.public:
            pretrain_public(
                model, recipe.data, callbacks=recipe.callbacks, ckpt_path=options.ckpt_path, **recipe.trainer_options
            )
        else:
            callbacks = [*recipe.callbacks, interruption]
            train(
                model,
                recipe.data,
                recipe.budget,
                callbacks=callbacks,
                ckpt_path=options.ckpt_path,
                **recipe.trainer_options,
            )
        if reinitialised:
            note_in_ledger(model.privacy_ledger, since, reinitialised)
        if options.save_pretrained and rank_zero_only.rank == 0:
            return _save(model, recipe, options, provenance)
        return TrainedRun(model)


def _resumable_plan(recipe: Recipe, options: RunOptions, provenance: Provenance) -> dict[str, Any]:
    """The recipe an interrupted run writes beside its checkpoint: its plan with its options and selection, and
    no checkpoint of its own (the resume command names it). Its folders are absolute, so the printed resume
    command works from any directory (the plan stays on this machine: it never reaches a card)."""
    plan = copy.deepcopy({**recipe.plan, **asdict(options), "selection": provenance.selection, "ckpt_path": None})
    if plan.get("save_pretrained"):
        plan["save_pretrained"] = str(Path(plan["save_pretrained"]).absolute())
    data = (plan.get("data") or {}).get("init_args") or {}
    if isinstance(data.get("root"), str):
        data["root"] = str(Path(data["root"]).absolute())
    return plan


def _save(model: DPGenerativeModel, recipe: Recipe, options: RunOptions, provenance: Provenance) -> TrainedRun:
    assert options.save_pretrained is not None
    folder = check_save_target(options.save_pretrained, options.overwrite)
    card_data = getattr(recipe.data, "card_data", None)  # an image folder describes itself for the card
    config = build_config(
        model,
        options.model_id or folder.name,
        provenance.recipe(),
        weights_dtype=options.weights_dtype,
        license=options.license,
        data=card_data() if card_data and not recipe.public else None,
    )
    write_model_folder(model, folder, config)
    say(f"saved {folder}")
    return TrainedRun(model, folder, config)


def _model_for_data(recipe: Recipe) -> DPGenerativeModel:
    """The recipe's model built for the data's image shape (and class count), checked before any training;
    ``per_class`` follows the data's class count unless the command line sets it."""
    pinned = {key.removeprefix("model.") for key in recipe.pinned if key.startswith("model.")}
    model, per_class = model_for_data(recipe.model, recipe.data, pinned=pinned), recipe.per_class
    if not per_class:
        return model
    classes = data_arguments_of(recipe.data).get("num_classes", per_class)
    if "per_class" in recipe.pinned:  # the first per_class classes only, as the user asks
        if per_class > classes:
            raise DataShapeError(f"--per_class {per_class} was given, but the data has {classes} classes")
        classes = per_class
    return method_class("per-class")(model.method, model.architecture(), classes)
