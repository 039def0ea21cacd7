"""``dpzoo fit``: train any method from a YAML recipe (LightningCLI parses it) by running the
method's stages (``zoo.stages.train``) with the recipe's DPCallback as the budget, and write
the result in Hub layout. ``--per_class K`` trains one model per class 0..K-1, each on its own
partition, released as one class-conditional model (parallel composition)."""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytorch_lightning import LightningDataModule
from pytorch_lightning.cli import LightningCLI

from lightning_modules.base import DPGenerativeModel
from lightning_modules.partitioned import PerClassModel
from zoo.hub import save_pretrained
from zoo.privacy import DPCallback, PrivacyConfigError
from zoo.privacy.pac import PACPrivacy
from zoo.stages import train


class DPZooCLI(LightningCLI):
    def add_arguments_to_parser(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument(
            "--save_pretrained", type=str | None, default=None, help="write the trained model here in Hub layout"
        )
        parser.add_argument("--model_id", default=None, help="model id for the card (default: the folder name)")
        parser.add_argument("--selection", default=None, help="how the recipe was chosen (stated in the card)")
        parser.add_argument("--weights_dtype", default="float32", help="float32 or float16 for the release")
        parser.add_argument(
            "--per_class", type=int, default=0, help="train one model per class 0..K-1 on data.for_class(k)"
        )
        parser.add_argument(
            "--ckpt_path",
            type=str | None,
            default=None,
            help="resume the plan from a checkpoint written during a stage",
        )


def _cli(args: Sequence[str]) -> DPZooCLI:
    # dpzoo passes its own argv on as ``args``; Lightning warns when sys.argv is also set
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
    return DPZooCLI(
        DPGenerativeModel,
        LightningDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        args=list(args),
        run=False,
        save_config_callback=None,
    )


def _budget_and_trainer_options(cli: DPZooCLI) -> tuple[DPCallback | PACPrivacy, list[Any], dict[str, Any]]:
    """The recipe's budget (a DPCallback, or PACPrivacy for a PAC-private method), its other callbacks,
    and the other Trainer arguments."""
    options = dict(cli.config_init["trainer"])
    callbacks = list(options.pop("callbacks", None) or [])
    budgets = [c for c in callbacks if isinstance(c, (DPCallback, PACPrivacy))]
    if len(budgets) != 1:
        raise PrivacyConfigError(
            "dpzoo fit trains privately: the recipe's trainer.callbacks must hold one zoo.privacy.DPCallback "
            f"(or zoo.privacy.pac.PACPrivacy), the privacy budget of the whole plan; found {len(budgets)}."
        )
    return budgets[0], [c for c in callbacks if c is not budgets[0]], options


def run_fit(argv: Sequence[str]) -> DPGenerativeModel:
    """``argv`` are LightningCLI arguments after ``fit`` (``--config recipe.yaml``, overrides, ...)."""
    cli = _cli(argv)
    options = cli.config
    privacy, callbacks, trainer_options = _budget_and_trainer_options(cli)
    model: DPGenerativeModel = cli.model
    if options.get("per_class"):
        model = PerClassModel(model.method, model.architecture(), options["per_class"])
    train(model, cli.datamodule, privacy, callbacks=callbacks, ckpt_path=options.get("ckpt_path"), **trainer_options)
    if options.get("save_pretrained"):
        configs = [str(c) for c in options.get("config") or []]
        recipe = {
            "config": configs[0] if len(configs) == 1 else configs,
            "command": "dpzoo fit " + shlex.join(argv),
            "selection": options.get("selection"),
        }
        folder = save_pretrained(
            model,
            Path(options["save_pretrained"]),
            model_id=options.get("model_id"),
            recipe=recipe,
            weights_dtype=options.get("weights_dtype") or "float32",
        )
        print(f"saved {folder}")
    return model
