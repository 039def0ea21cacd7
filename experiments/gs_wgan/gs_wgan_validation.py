"""Choose GS-WGAN's settings on held-out validation images only (never the private split, never the
test split): one run prints the validation CNN CAS of one setting under the noise of a sound ε.

The generator trains, as ``GSWGAN`` does, on the training half of the 10,000 validation images
(``validation_halves``: 5,000 images, which no shipped model protects) with ``--critics`` helpers,
so each critic holds 5,000 / K_probe images; ``--critics 50`` matches the part size of the MNIST
recipe (50,000 / 500 = 100 images) but trains each critic ten times as often as the recipe's 500
(critic t mod K trains at step t), which made this probe learn at ε = 10,000 where the recipe
collapsed (README, GS-WGAN): read it as an upper bound on what the recipe reaches. The sanitiser's
per-row noise is the one the real run would carry: σ_row calibrated for ``--eps`` at rate
1 / ``--private-critics`` over ``--steps`` steps (``--noise`` gives σ_row directly instead, e.g.
0.01 to ask whether a scale learns at all). A CNN (DP-LFlow E.4) trained on 10,000 samples of the
released generator is tested on the other 5,000 validation images.

    python experiments/gs_wgan/gs_wgan_validation.py --eps 100 --critics 50 --private-critics 500 --grid probe.png
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pytorch_lightning as pl
import torch
from torchvision.utils import save_image

from lightning_modules.gs_wgan import GSWGAN
from zoo.data import TensorDataModule
from zoo.privacy import DPBudget, calibrate_noise_multiplier
from zoo.privacy.mechanisms.output_sanitizer import row_noise_multiplier
from zoo.training import train

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from validation_halves import held_out_cnn_accuracy, validation_halves  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--critics", type=int, default=50, help="critics of the probe (5,000 images between them)")
    parser.add_argument("--private-critics", type=int, default=500, help="K of the real run: the rate 1/K of the noise")
    parser.add_argument("--steps", type=int, default=5000, help="generator steps")
    noise = parser.add_mutually_exclusive_group(required=True)
    noise.add_argument("--eps", type=float, help="sound ε (δ = 1e-5) whose noise the steps carry")
    noise.add_argument("--noise", type=float, help="per-row noise multiplier σ_row, given directly")
    parser.add_argument("--accountant", default="rdp", help="accountant that calibrates σ for --eps")
    parser.add_argument("--batch", type=int, default=32, help="generated rows per step (B)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--generator-width", type=int, default=32)
    parser.add_argument("--critic-width", type=int, default=8)
    parser.add_argument("--pretrain-steps", type=int, default=20)
    parser.add_argument("--critic-steps", type=int, default=5)
    parser.add_argument("--accelerator", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", default=None, help="also save 10 samples per class here (a PNG) to look at")
    args = parser.parse_args()

    pl.seed_everything(args.seed)
    (images, labels), held_out = validation_halves(args.dataset)
    sigma_row = args.noise
    if args.eps is not None:
        accounted = calibrate_noise_multiplier(args.eps, 1e-5, 1 / args.private_critics, args.steps, args.accountant)
        sigma_row = row_noise_multiplier(accounted, args.batch)
    data = TensorDataModule(images, labels, f"{args.dataset}-validation-probe")
    model = GSWGAN(
        num_classes=10,
        image_shape=tuple(images.shape[1:]),
        critics=args.critics,
        generator_width=args.generator_width,
        critic_width=args.critic_width,
        batch_size=args.batch,
        critic_steps=args.critic_steps,
        pretrain_steps=args.pretrain_steps,
        learning_rate=args.learning_rate,
    )
    start = time.time()
    privacy = DPBudget(noise_multiplier=sigma_row, accountant="rdp")
    train(
        model,
        data,
        privacy,
        max_steps=args.steps,
        accelerator=args.accelerator,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    seconds = round(time.time() - start)
    model.cpu()
    sample_labels = torch.arange(10_000) % 10
    samples = model.sample(10_000, sample_labels, seed=args.seed, progress=False)
    if args.grid:
        save_image(samples[:100], args.grid, nrow=10)
    accuracy = held_out_cnn_accuracy(samples, sample_labels, held_out)
    result = {**vars(args), "sigma_row": round(sigma_row, 3), "cas_cnn_val": round(accuracy, 2), "train_secs": seconds}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
