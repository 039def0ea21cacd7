"""Choose DP-MEPF's settings on held-out validation images only (never the test split, never a
protected image): one run prints the validation CNN CAS (and optionally the Inception FID) of one setting.

As experiments/dp_merf/dp_merf_validation.py: the labelled embedding of 5,000 of the 10,000 validation images
that every recipe holds out gets the noise that the release over N private images would carry at the
target ε (std σ/(w_k N) on part k's mean, σ calibrated by PRV at sensitivity 1); DPMEPF's generator is
fitted to it; a CNN (DP-LFlow E.4) trained on 10,000 samples is tested on the other 5,000 validation images,
whose two halves also give the gap ratios (experiments/dp_mepf/gap_ratio.py) of 2,500 samples.
Any DPMEPF argument can be set with --arch key=value (YAML values).

    python experiments/dp_mepf/dp_mepf_validation.py --dataset mnist --eps 1 --steps 1000
    python experiments/dp_mepf/dp_mepf_validation.py --dataset mnist --eps 1 --arch second_weight=0.5 --grid /tmp/g.png
    python experiments/dp_mepf/dp_mepf_validation.py --dataset cifar10 --eps 10 --private_n 40000 --fid 2000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import yaml
from torchvision.utils import save_image
from tqdm import trange

from lightning_modules.dp_mepf import DPMEPF
from lightning_modules.nets.random_features import labelled_embedding
from zoo.metrics import fidelity_metrics
from zoo.privacy import calibrate_noise_multiplier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from dp_mepf.gap_ratio import GapProbe, draw_samples  # noqa: E402
from validation_halves import held_out_cnn_accuracy, validation_halves  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arch", action="append", default=[], help="a DPMEPF argument, key=value (repeatable)")
    parser.add_argument("--private_n", type=int, default=50000, help="size of the private set the noise stands for")
    parser.add_argument("--grid", default=None, help="also save 10 samples per class here (a PNG) to look at")
    parser.add_argument("--fid", type=int, default=None, help="also the Inception FID of this many samples")
    parser.add_argument("--gap_every", type=int, default=0, help="print the gap ratios every this many steps")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    (embedded_images, embedded_labels), held_out = validation_halves(args.dataset)
    settings = {key: yaml.safe_load(value) for key, value in (a.split("=", 1) for a in args.arch)}
    model = DPMEPF(image_shape=tuple(embedded_images.shape[1:]), **settings)
    weights = model.features.part_weights.double()[:, None]
    sigma = calibrate_noise_multiplier(args.eps, 1e-5, 1.0, 1, "prv", [])
    start = time.time()
    with torch.no_grad():
        features = torch.cat([model.features(chunk.double()) for chunk in embedded_images.split(1000)])
        mean = labelled_embedding(features, embedded_labels, 10) / len(embedded_labels)
        noise = torch.randn(mean.shape, dtype=torch.float64) * sigma / (args.private_n * weights)
        model.released_embedding.copy_(mean + noise)
    gaps = GapProbe(model, held_out)
    optimizer, schedule = model.matching_optimizer(args.steps)
    for step in trange(1, args.steps + 1, desc="fitting the generator"):
        loss, _ = model.embedding_loss()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if args.gap_every and step % args.gap_every == 0 and step < args.steps:
            print(json.dumps({"step": step, **gaps(draw_samples(model, 2500))}), flush=True)
    samples, sample_labels = draw_samples(model, 10_000)
    if args.grid:
        save_image(samples[:100], args.grid, nrow=10)
    report = {
        **vars(args),
        "sigma": round(sigma, 3),
        **gaps((samples, sample_labels)),
        "cas_cnn_val": round(held_out_cnn_accuracy(samples, sample_labels, held_out), 2),
    }
    if args.fid:
        report["fid_val"] = round(
            fidelity_metrics(samples[: args.fid], held_out[0], ("fid",), args.dataset)["fid"]["value"], 1
        )
    print(json.dumps({**report, "secs": round(time.time() - start)}))


if __name__ == "__main__":
    main()
