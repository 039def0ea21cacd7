"""``dpzoo fit``: train any method from a YAML recipe (LightningCLI parses it) by running the
method's stages (``zoo.stages.train``) under the budget of the recipe's ``privacy:`` block (a
``zoo.privacy.DPBudget``, or ``PACBudget``), and write the result in Hub layout. ``--per_class K``
trains one model per class 0..K-1, each on its own partition, released as one class-conditional model
(parallel composition). A recipe whose data is declared public (``zoo.data.PublicData``) pretrains a base
without noise (``zoo.stages.pretrain_public``); ``--init_from`` starts a private recipe from such a base,
or any fine-tunable model.

Any image recipe runs on a folder of your own images (``--images PATH``): the model is built for
the data's image shape and class count (``zoo.shapes``) unless the command line sets them, and the saved
model records the folder's description (``ImageFolderDataModule.card_data``). ``dpzoo train`` runs
through ``run_fit`` too (``zoo.train``)."""

from __future__ import annotations

import importlib
import inspect
import re
import shlex
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pytorch_lightning import LightningDataModule
from pytorch_lightning.cli import LightningCLI

from lightning_modules.base import DPGenerativeModel
from lightning_modules.partitioned import PerClassModel
from zoo.base_weights import Reinitialised, check_base_fits_images, load_base, note_in_ledger
from zoo.data.folder_check import FolderProblems
from zoo.data.image_folder import ImageFolderDataModule
from zoo.data.public import PublicData
from zoo.hub import check_save_target, save_pretrained
from zoo.loading import load
from zoo.privacy import Budget, DPCallback, PrivacyConfigError
from zoo.privacy.barriers import check_finetunable
from zoo.shapes import DataShapeError, data_arguments_of, model_for_data
from zoo.stages import pretrain_public, train, without_lightning_tips

IMAGES_OPTION = "--images"
#: how a recipe written before budgets had their own block named its budget, among trainer.callbacks
OLD_BUDGETS = ("zoo.privacy.DPCallback", "zoo.privacy.pac.PACPrivacy")
MOVE_THE_BUDGET = (
    "the recipe names its budget among trainer.callbacks; recipes now give it a top-level block instead: move "
    "the callback's init_args under `privacy:` with `class_path: zoo.privacy.DPBudget` (zoo.privacy.PACBudget "
    "for a PACPrivacy), see any recipe in configs/"
)
#: what a recipe's data block passes on to a user's image folder: the rest is the folder's own default
KEPT_FROM_RECIPE = ("sample_rate",)
#: what ``run_fit`` calls once the model is built for the data, before any training:
#: ``(model, datamodule, budget or None, trainer options)``
BeforeTraining = Callable[[DPGenerativeModel, Any, "Budget | None", dict[str, Any]], None]


def fit_flag(name: str, value: Any) -> str:
    """An image folder's option as ``dpzoo fit`` takes it (``zoo.data.folder_check`` spells fixes with it)."""
    return f"--data.init_args.{name} {value}"


class DPZooCLI(LightningCLI):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = list(kwargs["args"])
        super().__init__(*args, **kwargs)

    def add_arguments_to_parser(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_subclass_arguments(
            Budget,
            "privacy",
            required=False,
            help="the privacy budget of the whole plan: zoo.privacy.DPBudget (target_epsilon, delta, max_grad_norm, "
            "accountant, ...) or zoo.privacy.PACBudget; none for data declared public (zoo.data.PublicData)",
        )
        parser.add_argument(
            "--save_pretrained", type=str | None, default=None, help="write the trained model here in Hub layout"
        )
        parser.add_argument(
            IMAGES_OPTION,
            type=str | None,
            default=None,
            help="train on your own image folder (root/<class>/*.png, optionally root/train + root/test): short for "
            "--data zoo.data.ImageFolderDataModule --data.root PATH. The model takes the folder's image shape "
            "and class count unless set here; the recipe's data settings other than sample_rate do not apply.",
        )
        parser.add_argument(
            "--overwrite", action="store_true", help="replace a model already in the --save_pretrained folder"
        )
        parser.add_argument("--model_id", default=None, help="model id for the card (default: the folder name)")
        parser.add_argument("--selection", default=None, help="how the recipe was chosen (stated in the card)")
        parser.add_argument("--weights_dtype", default="float32", help="float32 or float16 for the release")
        parser.add_argument(
            "--license", type=str | None, default=None, help="the licence of the release, on the card (default: none)"
        )
        parser.add_argument(
            "--per_class", type=int, default=0, help="train one model per class 0..K-1 on data.for_class(k)"
        )
        parser.add_argument(
            "--init_from",
            type=str | None,
            default=None,
            help="start from this model's released weights (an id or folder, e.g. a base pretrained on public "
            "data); its ledger comes along and the private data gets its own entry, as with zoo.finetune",
        )
        parser.add_argument(
            "--ckpt_path",
            type=str | None,
            default=None,
            help="resume the plan from a checkpoint written during a stage",
        )

    def before_instantiate_classes(self) -> None:
        """A recipe's data settings belong to its own data: on an image folder that the command line names
        (``--images``) only ``sample_rate`` carries over, and the rest takes the folder's defaults unless the
        command line sets it. A recipe that names a folder itself keeps its settings."""
        data = self.config["data"]
        given = command_line_keys(self.args)
        if data is None or "data" not in given or _import(data["class_path"]) is not ImageFolderDataModule:
            return
        for name, parameter in inspect.signature(ImageFolderDataModule).parameters.items():
            if name not in KEPT_FROM_RECIPE and f"data.{name}" not in given and name in data["init_args"]:
                data["init_args"][name] = parameter.default


def _import(class_path: str) -> Any:
    module, _, name = class_path.rpartition(".")
    return getattr(importlib.import_module(module), name, None)


def command_line_keys(argv: Sequence[str]) -> set[str]:
    """Options given on the command line rather than by a recipe: ``--model.init_args.image_shape``
    and ``--model.image_shape=...`` are both ``model.image_shape``."""
    keys = set()
    for token in argv:
        if token.startswith("--"):
            keys.add(token[2:].split("=", 1)[0].replace(".init_args.", "."))
    return keys


def _expand_images(argv: Sequence[str]) -> list[str]:
    """``--images PATH`` as LightningCLI's ``--data ImageFolderDataModule --data.root PATH``, placed right after
    the last recipe (``--config``) so that it replaces the recipe's data wherever it stands on the command line,
    and the folder's own settings (``--data.init_args.image_size 32``) apply to it wherever they stand."""
    expanded: list[str] = []
    images: list[str] = []
    after_recipe = 0
    tokens = iter(argv)
    for token in tokens:
        name, _, value = token.partition("=")
        if name == IMAGES_OPTION:
            root = value or next(tokens, None)
            if not root:
                raise ValueError(f"{IMAGES_OPTION} needs the path of an image folder")
            images = ["--data", "zoo.data.ImageFolderDataModule", "--data.root", root]
            continue
        expanded.append(token)
        if name == "--config":
            if not value and (path := next(tokens, None)) is not None:
                expanded.append(path)
            after_recipe = len(expanded)
    return [*expanded[:after_recipe], *images, *expanded[after_recipe:]]


def _refuse_old_style_recipes(args: Sequence[str]) -> None:
    """A recipe file with its budget among trainer.callbacks is refused before parsing, which would
    otherwise fail inside jsonargparse on the removed PACPrivacy."""
    configs = [Path(value) for option, value in zip(args, args[1:], strict=False) if option == "--config"]
    configs += [Path(token.split("=", 1)[1]) for token in args if token.startswith("--config=")]
    for config in configs:
        recipe = yaml.safe_load(config.read_text()) if config.is_file() else None
        callbacks = ((recipe or {}).get("trainer") or {}).get("callbacks") or []
        if any(isinstance(c, dict) and c.get("class_path") in OLD_BUDGETS for c in callbacks):
            raise PrivacyConfigError(f"{config}: {MOVE_THE_BUDGET}")


def _cli(args: Sequence[str]) -> DPZooCLI:
    # dpzoo passes its own argv on as ``args``; Lightning warns when sys.argv is also set
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
    _refuse_old_style_recipes(args)
    try:
        with without_lightning_tips():  # LightningCLI builds a Trainer too
            return DPZooCLI(
                DPGenerativeModel,
                LightningDataModule,
                subclass_mode_model=True,
                subclass_mode_data=True,
                args=_expand_images(args),
                run=False,
                save_config_callback=None,
            )
    except ValueError as error:
        plain = _class_message(str(error))
        if plain is None:
            raise
        raise ValueError(plain) from None


def _class_message(report: str) -> str | None:
    """jsonargparse reports a recipe's bad value (a budget's ε, a missing folder) as a failed match of every
    member of ``Class | None``: the class's own message, naming the class (None for any other error)."""
    if not report.startswith("Does not validate against any of the Union subtypes"):
        return None
    reasons = [line.strip()[2:] for line in report.splitlines() if line.strip().startswith("- ")]
    reasons = [reason for reason in reasons if "NoneType" not in reason]
    named = re.search(r"class_path='([^']+)'", report)
    return f"{named.group(1) + ': ' if named else ''}{' '.join(reasons)}" if reasons else None


def _trainer_callbacks(cli: DPZooCLI) -> tuple[list[Any], dict[str, Any]]:
    """The recipe's trainer callbacks and its other Trainer arguments. A budget among the callbacks (given on
    the command line) is refused, saying how to move it."""
    options = dict(cli.config_init["trainer"])
    callbacks = list(options.pop("callbacks", None) or [])
    if any(isinstance(c, DPCallback) for c in callbacks):
        raise PrivacyConfigError(MOVE_THE_BUDGET)
    return callbacks, options


def _budget(cli: DPZooCLI) -> Budget:
    """The recipe's ``privacy:`` block, the budget of the whole plan."""
    budget = cli.config_init.get("privacy")
    if not isinstance(budget, Budget):
        raise PrivacyConfigError(
            "dpzoo fit trains privately: the recipe needs a top-level `privacy:` block naming the budget of the "
            "whole plan (class_path: zoo.privacy.DPBudget with init_args target_epsilon, delta, ...; or "
            "zoo.privacy.PACBudget)"
        )
    return budget


def _check_no_budget(cli: DPZooCLI) -> None:
    """A recipe whose data is declared public (``zoo.data.PublicData``) pretrains without noise: a budget
    in it would mean the recipe thinks it spends one."""
    if cli.config_init.get("privacy") is not None:
        raise PrivacyConfigError(
            "the recipe's data is declared public (zoo.data.PublicData): public pretraining spends no budget, so "
            "it must not have a `privacy:` block; train on private data in a second recipe (--init_from the "
            "pretrained model)"
        )


def run_fit(
    argv: Sequence[str], recorded: dict[str, Any] | None = None, before_training: BeforeTraining | None = None
) -> DPGenerativeModel:
    """``argv`` are LightningCLI arguments after ``fit`` (``--config recipe.yaml``, overrides, ...). ``recorded``
    replaces what the saved model records of its recipe (``config``, ``command``, ``selection``)."""
    cli = _cli(argv)
    options = cli.config
    public = isinstance(cli.datamodule, PublicData)
    callbacks, trainer_options = _trainer_callbacks(cli)
    budget = None
    if public:
        _check_no_budget(cli)
    else:
        budget = _budget(cli)
    if options.get("save_pretrained"):
        check_save_target(options["save_pretrained"], overwrite=options.get("overwrite", False))
    try:
        model = _model_for_data(cli.model, cli.datamodule, options.get("per_class") or 0, command_line_keys(argv))
    except FolderProblems as problems:
        raise FolderProblems(problems.problems, problems.parts, fit_flag) from None
    reinitialised = initialise_from(model, options["init_from"], cli.datamodule) if options.get("init_from") else None
    since = len(model.privacy_ledger.entries) if model.privacy_ledger else 0
    if before_training is not None:
        before_training(model, cli.datamodule, budget, trainer_options)
    if public:
        pretrain_public(model, cli.datamodule, callbacks=callbacks, **trainer_options)
    else:
        ckpt_path = options.get("ckpt_path")
        train(model, cli.datamodule, budget, callbacks=callbacks, ckpt_path=ckpt_path, **trainer_options)
    if reinitialised:
        note_in_ledger(model.privacy_ledger, since, reinitialised)
    if options.get("save_pretrained"):
        configs = [str(c) for c in options.get("config") or []]
        recipe = {
            "config": configs[0] if len(configs) == 1 else configs,
            "command": "dpzoo fit " + shlex.join(argv),
            "selection": options.get("selection"),
            **(recorded or {}),
        }
        card_data = getattr(cli.datamodule, "card_data", None)
        folder = save_pretrained(
            model,
            Path(options["save_pretrained"]),
            model_id=options.get("model_id"),
            recipe=recipe,
            weights_dtype=options.get("weights_dtype") or "float32",
            overwrite=options.get("overwrite", False),
            license=options.get("license"),
            data=card_data() if card_data and not public else None,
        )
        print(f"saved {folder}")
    return model


def initialise_from(model: DPGenerativeModel, name: str, data: Any) -> Reinitialised | None:
    """Load the released weights and the ledger of model ``name`` into the recipe's ``model`` (same method,
    built for ``data``), after the checks of ``zoo.finetune``; the recipe's training settings apply. A base
    with another class count gives all but its class-dependent layers (``zoo.base_weights``)."""
    base = load(name)
    if base.method != model.method:
        raise DataShapeError(f"--init_from {name} is a {base.method} model, but the recipe trains {model.method}")
    check_finetunable(model)
    check_base_fits_images(base, data, name)
    reinitialised = load_base(model, base, name)
    if reinitialised:
        print(reinitialised.sentence())
    model.privacy_ledger = base.privacy_ledger
    return reinitialised


def _model_for_data(model: DPGenerativeModel, data: Any, per_class: int, given: set[str]) -> DPGenerativeModel:
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
    return PerClassModel(model.method, model.architecture(), classes)
