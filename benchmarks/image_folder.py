"""Load an image folder twice (the first decodes, the second reads the cache) and train DP-MERF's
recipe on it, printing the times: the default is the 50,000 CIFAR-10 training images.

    python benchmarks/image_folder.py [--root $DPZOO_DATA_DIR/cifar10-images] [--steps 200]

The first load runs with an empty cache of its own (a temporary DPZOO_CACHE_DIR), so it always
decodes; DP-MERF runs ``configs/dp_merf_mnist_eps1.yaml``'s model built for the folder's images.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import pytorch_lightning as pl
import yaml

from zoo.data import ImageFolderDataModule
from zoo.data.settings import CACHE_DIR_ENV, DATA_DIR_ENV
from zoo.methods import method_class
from zoo.privacy import DPBudget
from zoo.shapes import model_for_data
from zoo.training import train

RECIPE = Path(__file__).resolve().parents[1] / "configs" / "dp_merf_mnist_eps1.yaml"


class StepTimer(pl.Callback):
    """Wall time of the generator's steps (the stage after the release)."""

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.start = time.perf_counter()

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.seconds = time.perf_counter() - self.start


def timed_load(root: str) -> tuple[ImageFolderDataModule, float]:
    start = time.perf_counter()
    data = ImageFolderDataModule(root)
    data.setup()
    return data, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--root", default=os.path.join(os.environ.get(DATA_DIR_ENV, "../shared/data"), "cifar10-images")
    )
    parser.add_argument("--steps", type=int, default=200, help="DP-MERF generator steps to time")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as cache:
        os.environ[CACHE_DIR_ENV] = cache
        _, first = timed_load(args.root)
        data, second = timed_load(args.root)
    print(
        f"{args.root}: {len(data.train_part.files):,} training images, {data.image_shape}, {data.num_classes} classes"
    )
    print(f"first load (decode and cache): {first:.1f} s; second load (cache): {second:.1f} s")

    recipe = yaml.safe_load(RECIPE.read_text())
    pl.seed_everything(0, verbose=False)
    model = model_for_data(method_class("dp-merf")(**recipe["model"]["init_args"]), data)
    timer = StepTimer()
    start = time.perf_counter()
    privacy = DPBudget(target_epsilon=1.0, delta=1e-5, accountant="prv")
    quiet = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    train(model, data, privacy, callbacks=[timer], max_steps=args.steps, accelerator="cpu", **quiet)
    total = time.perf_counter() - start
    print(
        f"DP-MERF ({recipe['model']['init_args']['features']:,} features) on {len(data.train_set):,} private images: "
        f"release {total - timer.seconds:.1f} s, then {args.steps / timer.seconds:.1f} generator steps/s "
        f"(batch {model.hparams.batch_size}); ε = {model.privacy_ledger.guarantees()[data.dataset_id]['epsilon']:.3f}"
    )


if __name__ == "__main__":
    main()
