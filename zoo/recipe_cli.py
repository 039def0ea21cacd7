"""The recipe front end of ``dpzoo fit``: a YAML recipe and its command-line overrides, or a recipe given as a
mapping (``dpzoo train``'s plan for a folder, a Python caller's), parsed and instantiated by LightningCLI
(jsonargparse), into the objects a plan needs (``Recipe``).

- ``privacy:`` is the budget of the whole plan, a ``zoo.privacy.Budget`` (none for data declared public).
- ``--images PATH`` replaces the recipe's data by ``zoo.data.ImageFolderDataModule`` on that folder, where it
  stands on the command line (``ImagesOption``, a jsonargparse action), as every LightningCLI option applies
  left to right: after ``--config``, and before the folder's own options (``--data.init_args.image_size 32``);
  the other orders are refused, saying so. Of the recipe's data settings only ``sample_rate`` carries over.
- A class's own error (a ``zoo.errors.UserError``: an ε below zero, a missing folder) raised while the
  recipe's objects are built is raised as it is: jsonargparse reports it wrapped in its own message, and the
  class's exception is found among that report's causes, never by its text.
- A seed for the noise or the sampling (``privacy.init_args.noise_seed``, ``data.init_args.sampling_seed``) is
  refused: a seeded model is not private, and seeds are for tests, which set them in Python.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from jsonargparse import Namespace
from pytorch_lightning import Callback, LightningDataModule
from pytorch_lightning.cli import LightningCLI

from zoo.data.public import PublicData
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, check_data_arguments
from zoo.privacy import Budget, DPCallback, PrivacyConfigError
from zoo.privacy.budget import plan_seeds
from zoo.stages import without_lightning_tips

IMAGE_FOLDER = "zoo.data.ImageFolderDataModule"
#: what a recipe's data block passes on to a user's image folder: the rest is the folder's own default
KEPT_FROM_RECIPE = ("sample_rate",)
#: how a recipe written before budgets had their own block named its budget, among trainer.callbacks
OLD_BUDGETS = ("zoo.privacy.DPCallback", "zoo.privacy.pac.PACPrivacy")
MOVE_THE_BUDGET = (
    "the recipe names its budget among trainer.callbacks; recipes now give it a top-level block instead: move "
    "the callback's init_args under `privacy:` with `class_path: zoo.privacy.DPBudget` (zoo.privacy.PACBudget "
    "for a PACPrivacy), see any recipe in configs/"
)


@dataclass
class Recipe:
    """A recipe's objects, built for a run: nothing has trained yet."""

    model: DPGenerativeModel
    data: LightningDataModule
    #: the plan's budget; None for data declared public
    budget: Budget | None
    callbacks: list[Callback]
    trainer_options: dict[str, Any]
    #: train one model per class 0..K-1 (0: one model); with ``per_class`` among ``pinned`` the first K classes,
    #: else as many as the data has
    per_class: int
    #: the settings given on the command line rather than by the recipe (``model.image_shape``, ``per_class``):
    #: kept whatever the data (``zoo.shapes.model_for_data``)
    pinned: frozenset[str]
    #: the front end's own settings (``save_pretrained``, ``init_from``, ``selection``, ``config``, ...), from which
    #: it builds ``zoo.run_plan.RunOptions`` and ``Provenance``
    options: Namespace
    #: every setting of the run as one recipe (defaults included) that ``parse_recipe`` reads back: what an
    #: interrupted run writes beside its checkpoint to resume from
    plan: dict[str, Any]

    @property
    def public(self) -> bool:
        return isinstance(self.data, PublicData)


def kept_data_settings(recipe_data: Any) -> dict[str, Any]:
    """Of a recipe's data block (a mapping or jsonargparse Namespace), the settings an image folder that replaces
    it keeps (``KEPT_FROM_RECIPE``)."""
    recipe_args = recipe_data.get("init_args") if isinstance(recipe_data, (Mapping, Namespace)) else None
    return {k: recipe_args[k] for k in KEPT_FROM_RECIPE if recipe_args and recipe_args.get(k) is not None}


class ImagesOption(argparse.Action):
    """``--images PATH``: the recipe's data becomes the image folder at PATH, keeping its ``sample_rate``."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        kept = kept_data_settings(namespace.get("data"))
        namespace["data"] = Namespace(class_path=IMAGE_FOLDER, init_args=Namespace(root=values, **kept))
        namespace[self.dest] = values


class DPZooCLI(LightningCLI):
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
            "--images",
            action=ImagesOption,
            default=None,
            help="train on your own image folder (root/<class>/*.png, optionally root/train + root/test) instead of "
            "the recipe's data; give it after --config, and the folder's own options (--data.init_args.image_size "
            "32) after it. The model takes the folder's image shape and class count unless set here; of the "
            "recipe's data settings only sample_rate applies.",
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
        """A model's image shape or class count that no net can take would fail deep inside torch, and an
        ``images`` value that did not replace the data (a recipe's ``images:`` key) would be ignored: both
        refused in plain words."""
        model = self.config.get("model")
        if model is not None and model.get("init_args") is not None:
            check_data_arguments(model.class_path, model.init_args.as_dict())
        images = self.config.get("images")
        data = self.config.get("data")
        if images is not None and (data is None or data.class_path != IMAGE_FOLDER or data.init_args.root != images):
            raise UserError(
                f"--images {images} did not replace the data (a --config after it replaced the folder, or a recipe "
                "has an `images:` key): give --images after --config on the command line"
            )

    def instantiate_classes(self) -> None:
        try:
            super().instantiate_classes()
        except ValueError as error:
            raise _user_error_within(error) or error from None


def _user_error_within(error: BaseException) -> UserError | None:
    """The first ``UserError`` among ``error``'s causes (jsonargparse wraps a class's own error in its report)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, UserError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def parse_recipe(source: Sequence[str] | Mapping[str, Any]) -> Recipe:
    """The objects of a recipe, checked: a private recipe has a budget, a public one has none, and no budget hides
    among the trainer's callbacks. ``source``: ``dpzoo fit``'s arguments (``--config recipe.yaml``, overrides,
    ...), or the recipe as a mapping (a recipe file's content, with any settings changed; ``Recipe.plan``)."""
    if isinstance(source, Mapping):
        _refuse_old_style_recipe(source, "the recipe")
        args: list[str] | dict[str, Any] = dict(source)
        pinned: frozenset[str] = frozenset()
    else:
        _refuse_old_style_recipes(source)
        _check_images_order(source)
        args, pinned = list(source), _command_line_keys(source)
    with warnings.catch_warnings(), without_lightning_tips():  # LightningCLI builds a Trainer too
        # dpzoo passes its own argv on as ``args``; Lightning warns when sys.argv is also set
        warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
        cli = DPZooCLI(
            DPGenerativeModel,
            LightningDataModule,
            subclass_mode_model=True,
            subclass_mode_data=True,
            args=args,
            run=False,
            save_config_callback=None,
        )
    trainer_options = dict(cli.config_init["trainer"])
    callbacks = list(trainer_options.pop("callbacks", None) or [])
    if any(isinstance(c, DPCallback) for c in callbacks):
        raise PrivacyConfigError(MOVE_THE_BUDGET)
    recipe = Recipe(
        model=cli.model,
        data=cli.datamodule,
        budget=cli.config_init.get("privacy"),
        callbacks=callbacks,
        trainer_options=trainer_options,
        per_class=cli.config.get("per_class") or 0,
        pinned=pinned,
        options=cli.config,
        plan={**yaml.safe_load(cli.parser.dump(cli.config)), "images": None},  # the data block holds the folder
    )
    _check_budget(recipe)
    _refuse_seeds(recipe)
    return recipe


def _check_budget(recipe: Recipe) -> None:
    """A private recipe names the budget of its whole plan; one whose data is declared public
    (``zoo.data.PublicData``) pretrains without noise, so a budget in it would mean it thinks it spends one."""
    if recipe.public and recipe.budget is not None:
        raise PrivacyConfigError(
            "the recipe's data is declared public (zoo.data.PublicData): public pretraining spends no budget, so "
            "it must not have a `privacy:` block; train on private data in a second recipe (--init_from the "
            "pretrained model)"
        )
    if not recipe.public and not isinstance(recipe.budget, Budget):
        raise PrivacyConfigError(
            "dpzoo fit trains privately: the recipe needs a top-level `privacy:` block naming the budget of the "
            "whole plan (class_path: zoo.privacy.DPBudget with init_args target_epsilon, delta, ...; or "
            "zoo.privacy.PACBudget)"
        )


def _refuse_seeds(recipe: Recipe) -> None:
    """A seeded budget (``noise_seed``, PACBudget's ``seed``) or datamodule (``sampling_seed``) fixes the noise or
    the sampling, so the release is a deterministic function of the data and not private: seeds are for tests,
    which set them in Python, never for a recipe that trains a model to save."""
    seeds = plan_seeds(recipe.budget, recipe.data)
    if seeds:
        raise PrivacyConfigError(
            f"the recipe sets {', '.join(seeds)}: seeds are for tests only (a seeded model is not differentially "
            "private); remove it from the recipe and the command line"
        )


def _check_images_order(argv: Sequence[str]) -> None:
    """Options apply left to right, and ``--images`` replaces the data: a data option given before it would be
    lost, so it is refused, saying where it goes (a recipe after it is refused once parsed)."""
    names = [token.split("=", 1)[0] for token in argv]
    if "--images" not in names:
        return
    last = len(names) - 1 - names[::-1].index("--images")
    early = [name for name in names[:last] if name == "--data" or name.startswith("--data.")]
    if early:
        raise UserError(
            f"{early[0]} comes before --images, which replaces the data: give the folder's options after it"
        )


def _refuse_old_style_recipes(argv: Sequence[str]) -> None:
    """A recipe file with its budget among trainer.callbacks is refused before parsing, which would
    otherwise fail inside jsonargparse on the removed PACPrivacy."""
    configs = [Path(value) for option, value in zip(argv, argv[1:], strict=False) if option == "--config"]
    configs += [Path(token.split("=", 1)[1]) for token in argv if token.startswith("--config=")]
    for config in configs:
        if config.is_file():
            _refuse_old_style_recipe(yaml.safe_load(config.read_text()) or {}, str(config))


def _refuse_old_style_recipe(recipe: Mapping[str, Any], name: str) -> None:
    callbacks = (recipe.get("trainer") or {}).get("callbacks") or []
    if any(isinstance(c, Mapping) and c.get("class_path") in OLD_BUDGETS for c in callbacks):
        raise PrivacyConfigError(f"{name}: {MOVE_THE_BUDGET}")


def _command_line_keys(argv: Sequence[str]) -> frozenset[str]:
    """Options given on the command line rather than by a recipe: ``--model.init_args.image_shape``
    and ``--model.image_shape=...`` are both ``model.image_shape``."""
    return frozenset(token[2:].split("=", 1)[0].replace(".init_args.", ".") for token in argv if token.startswith("--"))
