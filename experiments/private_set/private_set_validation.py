"""Choose Private Set Generation's CPU recipe on held-out validation images only (never the test
split, never a protected image): one run prints two validation accuracies of one setting.

The method trains on 5,000 of the 10,000 validation images that every recipe holds out, with the
noise the real run over N = 50,000 private images adds at the target ε: Poisson batches of
expected size ``--batch`` and z calibrated by PRV for rate batch / N over the run's R·T·K steps,
so each sanitised gradient carries the real run's noise. Printed: the paper's protocol (its
ConvNet trained on S, ``--eval-epochs``) and the CNN CAS (DP-LFlow E.4, 10,000 samples of S),
both tested on the other 5,000 validation images. ``--z`` fixes the noise multiplier instead.

    python experiments/private_set/private_set_validation.py --eps 10 --rounds 20 --width 32
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torchvision.utils import save_image

from lightning_modules.private_set import PrivateSet
from zoo.data import TensorDataModule
from zoo.metrics.set_accuracy import convnet_accuracy
from zoo.privacy import DPBudget, calibrate_noise_multiplier
from zoo.training import train

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from validation_halves import held_out_cnn_accuracy, validation_halves  # noqa: E402

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_model_summary=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--eps", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=20, help="R: classifier re-draws")
    parser.add_argument("--outer", type=int, default=10, help="T")
    parser.add_argument("--batches", type=int, default=10, help="K: real batches per outer loop")
    parser.add_argument("--inner", type=int, default=50, help="J: classifier epochs on S")
    parser.add_argument("--spc", type=int, default=10)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--plain-norm", action="store_true", help="instance norm without affine parameters")
    parser.add_argument("--set_lr", type=float, default=0.1)
    parser.add_argument("--prior", action="store_true")
    parser.add_argument("--batch", type=int, default=256, help="expected Poisson batch")
    parser.add_argument("--clip", type=float, default=0.1)
    parser.add_argument("--private_n", type=int, default=50000, help="size of the private set the noise stands for")
    parser.add_argument("--z", type=float, default=None, help="noise multiplier of a step, instead of --eps")
    parser.add_argument("--eval-epochs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write S here as a grid")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    (images, labels), held_out = validation_halves(args.dataset)
    steps = args.rounds * args.outer * args.batches
    z = args.z or calibrate_noise_multiplier(args.eps, 1e-5, args.batch / args.private_n, steps, "prv")
    model = PrivateSet(
        image_shape=tuple(images.shape[1:]),
        images_per_class=args.spc,
        prior=args.prior,
        width=args.width,
        depth=args.depth,
        norm_affine=not args.plain_norm,
        outer_loop=args.outer,
        batch_loop=args.batches,
        inner_loop=args.inner,
        set_lr=args.set_lr,
    )
    data = TensorDataModule(images, labels, "validation-probe", sample_rate=args.batch / len(labels))
    privacy = DPBudget(noise_multiplier=z, max_grad_norm=args.clip, accountant="rdp")
    start = time.time()
    train(model, data, privacy, max_steps=steps, **QUIET)
    train_secs = time.time() - start
    synthetic = model.released_set()
    if args.out is not None:
        save_image(synthetic[0], args.out, nrow=args.spc)
    sample_labels = torch.arange(10_000) % 10
    report = {
        **vars(args),
        "steps": steps,
        "z": round(z, 4),
        "set_convnet_val": round(convnet_accuracy(synthetic, held_out, 10, 0, args.eval_epochs), 2),
        "cas_cnn_val": round(held_out_cnn_accuracy(model.sample(10_000, sample_labels), sample_labels, held_out), 2),
        "train_secs": round(train_secs),
    }
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
