"""``dpzoo fit``: train any method from a YAML recipe with LightningCLI, privately, and
write the result in Hub layout."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from pytorch_lightning import LightningDataModule
from pytorch_lightning.cli import LightningCLI

from lightning_modules.base import DPGenerativeModel
from zoo.hub import save_pretrained
from zoo.privacy import DPCallback, PrivacyConfigError


class DPZooCLI(LightningCLI):
    def add_arguments_to_parser(self, parser) -> None:  # type: ignore[no-untyped-def]
        parser.add_argument("--save_pretrained", default=None, help="write the trained model here in Hub layout")
        parser.add_argument("--model_id", default=None, help="model id for the card (default: the folder name)")
        parser.add_argument("--selection", default=None, help="how the recipe was chosen (stated in the card)")
        parser.add_argument("--weights_dtype", default="float32", help="float32 or float16 for the release")

    def before_fit(self) -> None:
        if not any(isinstance(c, DPCallback) for c in self.trainer.callbacks):  # type: ignore[attr-defined]
            raise PrivacyConfigError(
                "dpzoo fit trains privately: add zoo.privacy.DPCallback to trainer.callbacks in the recipe."
            )


def run_fit(argv: Sequence[str]) -> None:
    """``argv`` are LightningCLI arguments after ``fit`` (``--config recipe.yaml``, overrides, ...)."""
    cli = DPZooCLI(
        DPGenerativeModel,
        LightningDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        args=["fit", *argv],
        save_config_callback=None,
    )
    options = cli.config["fit"]
    if options.get("save_pretrained"):
        configs = [str(c) for c in options.get("config") or []]
        recipe = {
            "config": configs[0] if len(configs) == 1 else configs,
            "command": "dpzoo fit " + shlex.join(argv),
            "selection": options.get("selection"),
        }
        folder = save_pretrained(
            cli.model,
            Path(options["save_pretrained"]),
            model_id=options.get("model_id"),
            recipe=recipe,
            weights_dtype=options.get("weights_dtype") or "float32",
        )
        print(f"saved {folder}")
