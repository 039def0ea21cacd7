"""Probe P3DM's mechanism on held-out validation images only (never the test split, never a protected
image): how good are its samples before the PAC noise, and how much do they move between data subsets
(the variance the PAC noise must cover)?

Trains the mechanism M (score model + guidance classifier, then guided Langevin sampling of
``images_per_class`` × 10 images with the recipe's fixed seeds) on two random halves of 5,000 of the
10,000 validation images, and prints: the CNN CAS of each run's samples (DP-LFlow E.4, tested on the
other 5,000 validation images), the estimate ½‖M(X) − M(X')‖² of tr Σ from the pair, the noise σ that
an MI bound of ``--mi-bound`` nats then needs (without the confidence term), and the seconds per run.
A picture of both runs' samples goes to ``--out``.

    python benchmarks/p3dm_validation.py --dataset mnist --train-steps 1000 --width 16
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch
from torchvision.utils import save_image
from validation_halves import held_out_cnn_accuracy, validation_halves

from lightning_modules.p3dm import P3DM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--train-steps", type=int, default=1000)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--sigma-max", type=float, default=1.0)
    parser.add_argument("--levels", type=int, default=10)
    parser.add_argument("--steps-per-level", type=int, default=20)
    parser.add_argument("--step-size", type=float, default=2e-5)
    parser.add_argument("--guidance", type=float, default=1.0)
    parser.add_argument("--images-per-class", type=int, default=10)
    parser.add_argument("--mi-bound", type=float, default=10.0)
    parser.add_argument("--out", default="p3dm_validation.png")
    args = parser.parse_args()

    (images, labels), held_out = validation_halves(args.dataset)
    model = P3DM(
        images_per_class=args.images_per_class,
        width=args.width,
        classifier_width=args.width,
        train_steps=args.train_steps,
        sigma_max=args.sigma_max,
        noise_levels=args.levels,
        steps_per_level=args.steps_per_level,
        step_size=args.step_size,
        guidance_scale=args.guidance,
    )
    set_labels = model.released_set.labels
    runs, accuracies, seconds = [], [], []
    for seed in (1, 2):
        keep = torch.rand(len(labels), generator=torch.Generator().manual_seed(seed)) < 0.5
        start = time.time()
        samples = model.mechanism(images[keep], labels[keep])
        seconds.append(time.time() - start)
        runs.append(samples)
        repeats = math.ceil(10_000 / len(samples))
        accuracies.append(held_out_cnn_accuracy(samples.repeat(repeats, 1, 1, 1), set_labels.repeat(repeats), held_out))
    variance = 0.5 * (runs[0] - runs[1]).square().sum().item()
    save_image(torch.cat(runs), args.out, nrow=10 * args.images_per_class // 10)
    print(
        json.dumps(
            {
                "dataset": args.dataset,
                "cnn_cas_before_noise": accuracies,
                "trace_estimate": variance,
                "per_pixel_variance": variance / runs[0].numel(),
                "noise_std_for_mi_bound_without_confidence_term": math.sqrt(variance / (2 * args.mi_bound)),
                "seconds_per_run": seconds,
                "settings": vars(args),
            }
        )
    )


if __name__ == "__main__":
    main()
