"""``dpzoo fit``: train any method from a YAML recipe (LightningCLI parses it) by running the
method's stages (``zoo.training.train``) under the budget of the recipe's ``privacy:`` block (a
``zoo.privacy.DPBudget``, or ``PACBudget``), and write the result in Hub layout. ``--per_class K``
trains one model per class 0..K-1, each on its own partition, released as one class-conditional model
(parallel composition). A recipe whose data is declared public (``zoo.data.PublicData``) pretrains a base
without noise (``zoo.training.pretrain_public``); ``--init_from`` starts a private recipe from such a base,
or any fine-tunable model.

Any image recipe runs on a folder of your own images (``--images PATH``): the model is built for
the data's image shape and class count (``zoo.shapes``) unless the command line sets them, and the saved
model records the folder's description (``ImageFolderDataModule.card_data``). ``dpzoo train`` runs
through ``run_fit`` too (``zoo.train``).

Ctrl-C ends a run in one line (``TrainingInterrupted``): during a stage's training steps it stops after the step,
saving a Lightning checkpoint beside the model folder (``<save_pretrained>.interrupted.ckpt``) and printing the
command that resumes it (``--ckpt_path``, ``zoo.training``: no stage before it is run again, so nothing is spent
twice); anywhere else it stops at once, and nothing is saved.

Under DDP (``--trainer.strategy ddp --trainer.devices N``) Lightning re-runs the whole command in every
process: every rank trains, and only global rank 0 saves and prints (:func:`say`); the other ranks
return the model they trained without writing anything. Ctrl-C then stops at once on every rank."""

from __future__ import annotations

import shlex
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from pytorch_lightning import Callback, LightningDataModule, LightningModule, Trainer
from pytorch_lightning.utilities import rank_zero_only

from zoo.base_weights import check_base, note_in_ledger, start_from
from zoo.data.folder_check import FolderProblems
from zoo.methods import DPGenerativeModel, method_class
from zoo.privacy import Budget
from zoo.privacy.ddp import check_buffer_sync
from zoo.recipe_cli import Recipe, command_line_keys, parse_recipe
from zoo.release.hub import check_save_target, save_pretrained
from zoo.release.loading import load
from zoo.shapes import DataShapeError, data_arguments_of, model_for_data
from zoo.training import pretrain_public, train

#: what ``run_fit`` calls once the model is built for the data, before any training:
#: ``(model, datamodule, budget or None, trainer options)``
BeforeTraining = Callable[[DPGenerativeModel, LightningDataModule, "Budget | None", dict[str, Any]], None]


@rank_zero_only
def say(*lines: str) -> None:
    """Print on global rank 0 only: under DDP every rank runs the command, and one says what it did."""
    print(*lines, sep="\n", flush=True)


class TrainingInterrupted(BaseException):
    """Ctrl-C during ``run_fit``, in one line: what was saved and how to resume. A BaseException, as KeyboardInterrupt
    is, so that no ``except Exception`` (the estimate's) goes on after it; not a KeyboardInterrupt, which Lightning
    answers with its own shutdown message and exit status."""


class Interruption(Callback):
    """SIGINT while ``run_fit`` runs (a context manager around it, and a callback of every stage's Trainer).

    During a stage's training steps the first Ctrl-C is kept until the step ends: the next step's start saves a
    Lightning checkpoint (weights, optimiser, loops, ledger and stage: each step's ε is counted before its update,
    so they agree) and stops the whole plan; a second Ctrl-C stops at once. Anywhere else (parsing, the estimate,
    a Release stage, saving), or without a ``checkpoint`` path, or under DDP, it stops at once and saves nothing."""

    def __init__(self, checkpoint: Path | None, resume: str) -> None:
        self.checkpoint, self.resume = checkpoint, resume
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
        assert self.checkpoint is not None
        trainer.save_checkpoint(self.checkpoint, weights_only=False)  # optimiser, loops and callbacks too
        raise TrainingInterrupted(
            f"interrupted after step {trainer.global_step}: saved {self.checkpoint}; resume with "
            f"{self.resume} --ckpt_path {shlex.quote(str(self.checkpoint))}"
        )


def interrupted_checkpoint(save_pretrained: str | Path) -> Path:
    """Where an interrupted run that would save its model in ``save_pretrained`` keeps its checkpoint: beside it,
    never inside (the model folder holds a model's files only, ``zoo.release.save_target``)."""
    folder = Path(save_pretrained)
    return folder.with_name(f"{folder.name}.interrupted.ckpt")


def resume_command(argv: Sequence[str]) -> str:
    """``dpzoo fit`` with ``argv``, less any ``--ckpt_path`` (the command that resumes adds its own)."""
    kept, skip = [], False
    for arg in argv:
        if skip or arg.startswith("--ckpt_path="):
            skip = False
        elif arg == "--ckpt_path":
            skip = True
        else:
            kept.append(arg)
    return "dpzoo fit " + shlex.join(kept)


def fit_flag(name: str, value: Any) -> str:
    """An image folder's option as ``dpzoo fit`` takes it (``zoo.data.folder_check`` spells fixes with it)."""
    return f"--data.init_args.{name} {value}"


def run_fit(
    argv: Sequence[str], recorded: dict[str, Any] | None = None, before_training: BeforeTraining | None = None
) -> DPGenerativeModel:
    """``argv`` are LightningCLI arguments after ``fit`` (``--config recipe.yaml``, overrides, ...). ``recorded``
    replaces what the saved model records of its recipe (``config``, ``command``, ``selection``). Ctrl-C raises
    ``TrainingInterrupted`` (the module docstring)."""
    with Interruption(None, resume_command(argv)) as interruption:
        return _run_fit(argv, recorded, before_training, interruption)


def _run_fit(
    argv: Sequence[str],
    recorded: dict[str, Any] | None,
    before_training: BeforeTraining | None,
    interruption: Interruption,
) -> DPGenerativeModel:
    recipe = parse_recipe(argv)
    options = recipe.options
    check_buffer_sync(recipe.trainer_options.get("strategy"))
    if options.get("save_pretrained"):
        check_save_target(options["save_pretrained"], overwrite=options.get("overwrite", False))
        if options.get("per_class"):
            interruption.unsaved = "a model trained per class cannot resume mid-plan yet"  # zoo.training
        else:
            interruption.checkpoint = interrupted_checkpoint(options["save_pretrained"])
    try:
        model = _model_for_data(recipe.model, recipe.data, options.get("per_class") or 0, command_line_keys(argv))
    except FolderProblems as problems:
        raise FolderProblems(problems.problems, problems.parts, fit_flag) from None
    reinitialised = None
    if options.get("init_from"):
        base = load(options["init_from"])
        check_base(base, recipe.data, options["init_from"])
        reinitialised = start_from(model, base, options["init_from"])
    since = len(model.privacy_ledger.entries) if model.privacy_ledger else 0
    if before_training is not None:
        before_training(model, recipe.data, recipe.budget, recipe.trainer_options)
    if recipe.public:
        pretrain_public(model, recipe.data, callbacks=recipe.callbacks, **recipe.trainer_options)
    else:
        train(
            model,
            recipe.data,
            recipe.budget,
            callbacks=[*recipe.callbacks, interruption],
            ckpt_path=options.get("ckpt_path"),
            **recipe.trainer_options,
        )
    if reinitialised:
        note_in_ledger(model.privacy_ledger, since, reinitialised)
    if options.get("save_pretrained") and rank_zero_only.rank == 0:
        _save(model, recipe, argv, recorded)
    return model


def _save(model: DPGenerativeModel, recipe: Recipe, argv: Sequence[str], recorded: dict[str, Any] | None) -> None:
    options = recipe.options
    configs = [str(c) for c in options.get("config") or []]
    card_data = getattr(recipe.data, "card_data", None)  # an image folder describes itself for the card
    folder = save_pretrained(
        model,
        Path(options["save_pretrained"]),
        model_id=options.get("model_id"),
        recipe={
            "config": configs[0] if len(configs) == 1 else configs,
            "command": "dpzoo fit " + shlex.join(argv),
            "selection": options.get("selection"),
            **(recorded or {}),
        },
        weights_dtype=options.get("weights_dtype") or "float32",
        overwrite=options.get("overwrite", False),
        license=options.get("license"),
        data=card_data() if card_data and not recipe.public else None,
    )
    say(f"saved {folder}")


def _model_for_data(
    model: DPGenerativeModel, data: LightningDataModule, per_class: int, given: set[str]
) -> DPGenerativeModel:
    """The recipe's model built for the data's image shape (and class count), checked before any training;
    ``per_class`` follows the data's class count unless the command line sets it."""
    model = model_for_data(model, data, pinned={k.removeprefix("model.") for k in given if k.startswith("model.")})
    if not per_class:
        return model
    classes = data_arguments_of(data).get("num_classes", per_class)
    if "per_class" in given:  # the first per_class classes only, as the user asks
        if per_class > classes:
            raise DataShapeError(f"--per_class {per_class} was given, but the data has {classes} classes")
        classes = per_class
    return method_class("per-class")(model.method, model.architecture(), classes)
