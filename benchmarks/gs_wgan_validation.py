"""Choose GS-WGAN's CPU-scale settings on held-out validation images (never the private split).

Trains the CPU recipe's networks (DCGAN generator width 32, critics width 8, 20 pretraining
iterations per critic) on the first ``--images`` images of the 10,000-image validation split,
which no shipped model protects, at a fixed per-row noise ``--noise`` (by default negligible, to
ask whether the scale can learn at all), and writes a sample grid of the released (averaged)
generator, one column per class, to ``--out``.

    python benchmarks/gs_wgan_validation.py --critics 50 --learning-rate 1e-3
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytorch_lightning as pl
from torchvision.utils import save_image

from lightning_modules.gs_wgan import GSWGAN
from zoo.data import ImageDataModule, TensorDataModule
from zoo.privacy import DPCallback
from zoo.stages import train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist", choices=["mnist", "fashion_mnist"])
    parser.add_argument("--images", type=int, default=5000, help="validation images to train on")
    parser.add_argument("--critics", type=int, default=10)
    parser.add_argument("--steps", type=int, default=1500, help="generator steps")
    parser.add_argument("--noise", type=float, default=0.01, help="per-row noise multiplier σ_row")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--out", type=Path, default=Path("gs_wgan_validation.png"))
    args = parser.parse_args()

    pl.seed_everything(0)
    full = ImageDataModule(args.dataset)
    full.setup("fit")
    images, labels = full.validation_set.tensors
    data = TensorDataModule(images[: args.images], labels[: args.images], f"{args.dataset}-validation-probe")
    model = GSWGAN(
        critics=args.critics, generator_width=32, critic_width=8, pretrain_steps=20, learning_rate=args.learning_rate
    )
    privacy = DPCallback(noise_multiplier=args.noise, accountant="rdp")
    train(model, data, privacy, max_steps=args.steps, accelerator="cpu", logger=False, enable_checkpointing=False)
    save_image(model.sample(100, seed=0), args.out, nrow=10)
    print(f"wrote {args.out}: {args.steps} steps, {args.critics} critics, σ_row {args.noise}, lr {args.learning_rate}")


if __name__ == "__main__":
    main()
