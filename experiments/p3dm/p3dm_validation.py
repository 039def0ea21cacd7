"""Probe P3DM's mechanism on held-out validation images only (never the test split, never a protected
image): how good are its samples before the PAC noise, and how much do they move between data subsets
(the variance the PAC noise must cover), and what does the release look like at each MI bound?

Trains the mechanism M (score model + guidance classifier, then guided Langevin sampling of
``images_per_class`` × 10 images with the recipe's fixed seeds) on two random halves of 5,000 of the
10,000 validation images, and prints: the CNN CAS of each run's samples (DP-LFlow E.4, tested on the
other 5,000 validation images), the estimate ½‖M(X) − M(X')‖² of tr Σ from the pair, and for each MI
bound of ``--mi-bounds`` (nats) the noise σ = √(tr Σ / 2v) it needs (without the confidence term) and
the CNN CAS of the first run's samples with that noise added: the chart of bound against signal.
A picture goes to ``--out``, one image per class in each row: both runs' samples, then the first
run's noised at each bound (clipped to [0, 1] for display only).

    python experiments/p3dm/p3dm_validation.py --dataset mnist --train-steps 1000 --width 16 --mi-bounds 1,10,100,1000
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
from torchvision.utils import save_image

from lightning_modules.p3dm import P3DM

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from validation_halves import held_out_cnn_accuracy, validation_halves  # noqa: E402


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
    parser.add_argument("--mi-bounds", default="1,10,100,1000,10000", help="MI bounds in nats, comma-separated")
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
    noised, rows = [], []
    for bound in (float(v) for v in args.mi_bounds.split(",")):
        noise_std = math.sqrt(variance / (2 * bound))
        release = runs[0] + noise_std * torch.randn(runs[0].shape, generator=torch.Generator().manual_seed(0))
        repeats = math.ceil(10_000 / len(release))
        cas = held_out_cnn_accuracy(release.repeat(repeats, 1, 1, 1), set_labels.repeat(repeats), held_out)
        noised.append({"mi_bound": bound, "noise_std": round(noise_std, 4), "cnn_cas": cas})
        rows.append(release.clamp(0, 1))
    one_per_class = slice(None, None, args.images_per_class)  # the set is in class order
    save_image(torch.cat([r[one_per_class] for r in (*runs, *rows)]), args.out, nrow=10)
    print(
        json.dumps(
            {
                "dataset": args.dataset,
                "cnn_cas_before_noise": accuracies,
                "trace_estimate": variance,
                "per_pixel_variance": variance / runs[0].numel(),
                "noised_release_by_mi_bound_without_confidence_term": noised,
                "seconds_per_run": seconds,
                "settings": vars(args),
            }
        )
    )


if __name__ == "__main__":
    main()
