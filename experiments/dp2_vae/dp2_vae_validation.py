"""Compare DP²-VAE's two variants on held-out validation images only (never the test split, never a
protected image): one run prints the validation CNN CAS of one variant and setting.

The 10,000 validation images that every recipe holds out are split in two. A variant trains on
5,000 of them with the noise that the real run over N = 50,000 private images would add at the
target ε (σ calibrated by PRV for that run's sampling and steps), so the noise per averaged
gradient is the real run's; a CNN (DP-LFlow E.4) trained on 10,000 samples is tested on the other
5,000 validation images.

- ``--variant dp-encoder``: Poisson batches of expected size ``--batch``; z calibrated for rate
  batch / N over ``--steps``.
- ``--variant helpers``: the paper's encoders; the run's K = ``--encoders`` parts of N / K
  images are probed with 5,000 / (N / K) parts of the same size, z calibrated for rate 1/K, and
  the noise on the decoder's sum is σ = 2B·z.

``--z`` fixes the step's noise multiplier instead (a negligible one asks whether a setting can
learn at all).

    python experiments/dp2_vae/dp2_vae_validation.py --variant dp-encoder --eps 10 --steps 2000 --batch 500
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torchvision.utils import save_image

from lightning_modules.dp2_vae import DP2VAE, DP2VAEDPEncoder
from zoo.data import TensorDataModule
from zoo.privacy import DPBudget, calibrate_noise_multiplier
from zoo.training import train

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from validation_halves import held_out_cnn_accuracy, validation_halves  # noqa: E402

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_model_summary=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--variant", choices=["dp-encoder", "helpers"], default="dp-encoder")
    parser.add_argument("--eps", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=500, help="expected (dp-encoder) or exact (helpers) batch")
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--channels", default="32,64")
    parser.add_argument("--latent", type=int, default=8)
    parser.add_argument("--encoders", type=int, default=1000, help="K of the real run (helpers)")
    parser.add_argument("--pretrain", type=int, default=100, help="pretraining steps per encoder (helpers)")
    parser.add_argument("--private_n", type=int, default=50000, help="size of the private set the noise stands for")
    parser.add_argument("--z", type=float, default=None, help="noise multiplier of a step, instead of --eps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write a grid of 100 samples here")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    (images, labels), held_out = validation_halves(args.dataset)
    channels = tuple(int(c) for c in args.channels.split(","))
    shape = tuple(images.shape[1:])  # the data's image shape: MNIST's or CIFAR-10's
    start = time.time()
    if args.variant == "dp-encoder":
        z = args.z or calibrate_noise_multiplier(args.eps, 1e-5, args.batch / args.private_n, args.steps, "prv")
        model = DP2VAEDPEncoder(image_shape=shape, channels=channels, latent_dim=args.latent, learning_rate=args.lr)
        data_rate, noise = args.batch / len(labels), z
    else:
        z = args.z or calibrate_noise_multiplier(args.eps, 1e-5, 1 / args.encoders, args.steps, "prv")
        probe_parts = max(1, round(len(labels) * args.encoders / args.private_n))
        model = DP2VAE(
            image_shape=shape,
            channels=channels,
            latent_dim=args.latent,
            encoders=probe_parts,
            batch_size=args.batch,
            pretrain_steps=args.pretrain,
            pretrain_clip=args.clip,
            learning_rate=args.lr,
        )
        data_rate, noise = 0.1, 2 * args.batch * z
    data = TensorDataModule(images, labels, "validation-probe", sample_rate=data_rate)
    privacy = DPBudget(noise_multiplier=noise, max_grad_norm=args.clip, accountant="rdp")
    train(model, data, privacy, max_steps=args.steps, **QUIET)
    sample_labels = torch.arange(10_000) % 10
    samples = model.sample(10_000, sample_labels, seed=0)
    if args.out is not None:
        save_image(samples[:100], args.out, nrow=10)
    accuracy = held_out_cnn_accuracy(samples, sample_labels, held_out)
    report = {**vars(args), "z": round(z, 4), "cas_cnn_val": round(accuracy, 2), "secs": round(time.time() - start)}
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
