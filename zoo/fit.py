"""``dpzoo fit``: train any method from a YAML recipe with LightningCLI, privately, and
write the result in Hub layout. ``--per_class K`` trains one model per class 0..K-1 (each
on its own partition, with its own DPCallback) and releases them as one class-conditional
model (parallel composition)."""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Sequence
from pathlib import Path

from pytorch_lightning import LightningDataModule
from pytorch_lightning.cli import LightningCLI

from lightning_modules.base import DPGenerativeModel
from lightning_modules.partitioned import PerClassModel
from zoo.hub import save_pretrained
from zoo.privacy import DPCallback, PrivacyConfigError


class DPZooCLI(LightningCLI):
    def add_arguments_to_parser(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument(
            "--save_pretrained", type=str | None, default=None, help="write the trained model here in Hub layout"
        )
        parser.add_argument("--model_id", default=None, help="model id for the card (default: the folder name)")
        parser.add_argument("--selection", default=None, help="how the recipe was chosen (stated in the card)")
        parser.add_argument("--weights_dtype", default="float32", help="float32 or float16 for the release")
        parser.add_argument(
            "--per_class", type=int, default=0, help="train one model per class 0..K-1 on data.init_args.label"
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


def _fit_privately(cli: DPZooCLI) -> DPGenerativeModel:
    if not any(isinstance(c, DPCallback) for c in cli.trainer.callbacks):  # type: ignore[attr-defined]
        raise PrivacyConfigError(
            "dpzoo fit trains privately: add zoo.privacy.DPCallback to trainer.callbacks in the recipe."
        )
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return cli.model


def run_fit(argv: Sequence[str]) -> DPGenerativeModel:
    """``argv`` are LightningCLI arguments after ``fit`` (``--config recipe.yaml``, overrides, ...)."""
    cli = _cli(argv)
    options = cli.config
    if options.get("per_class"):
        parts = [
            _fit_privately(_cli([*argv, "--data.init_args.label", str(label)])) for label in range(options["per_class"])
        ]
        model: DPGenerativeModel = PerClassModel.from_parts(parts)
    else:
        model = _fit_privately(cli)
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
