"""The gap ratio: how far a generator's samples are from real images, block by block, in the features
DP-MEPF matches, measured against the floor that fresh real data sets (issue 52's diagnostic).

For each chosen block, with every record's output scaled to norm 1 and per-class means μ_c,

    gap = Σ_c ‖μ_c(real A) − μ_c(samples)‖² / Σ_c ‖μ_c(real A) − μ_c(real B)‖²

over two disjoint halves A and B of held-out real images and as many samples per class as B holds: 1 is
indistinguishable from fresh real data, larger is further away. Inception-free and cheap (one pass of the
feature network), so it can choose settings and show convergence. Compute it on validation images only.

A released model's gap ratios, on the held-out half of the validation split (experiments/validation_halves.py),
with 2,500 samples in balanced classes:

    python experiments/dp_mepf/gap_ratio.py checkpoints/dp-mepf-cifar10-eps10 --dataset cifar10
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import Tensor

from lightning_modules.dp_mepf import DPMEPF
from lightning_modules.nets.perceptual_features import PerceptualFeatures

CHUNK = 500
#: the reference features every setting is also scored on: (network, blocks, input size, stem)
REFERENCE_TAPS = ("efficientnet_lite0", (0, 1, 2, 3, 4), 64, False)


@torch.no_grad()
def class_means_per_block(features: PerceptualFeatures, images: Tensor, labels: Tensor, classes: int) -> list[Tensor]:
    """Per block, the (classes, block features) means of the unit-norm block outputs."""
    sums: list[Tensor] | None = None
    for start in range(0, len(images), CHUNK):
        one_hot = torch.nn.functional.one_hot(labels[start : start + CHUNK].long(), classes).double()
        blocks = features.unit_blocks(images[start : start + CHUNK])
        chunk_sums = [one_hot.T @ block.double() for block in blocks]
        sums = chunk_sums if sums is None else [a + b for a, b in zip(sums, chunk_sums, strict=True)]
    counts = torch.bincount(labels.long(), minlength=classes).double().clamp_min(1)[:, None]
    assert sums is not None, "no images"
    return [total / counts for total in sums]


def gap_ratios(a: list[Tensor], b: list[Tensor], s: list[Tensor]) -> list[float]:
    """The gap ratio of each block, in order, from the class means (``class_means_per_block``) of real halves
    ``a`` and ``b`` and of the samples ``s``."""
    return [
        float((mean_a - mean_s).square().sum() / (mean_a - mean_b).square().sum())
        for mean_a, mean_b, mean_s in zip(a, b, s, strict=True)
    ]


def draw_samples(model: DPMEPF, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples in balanced classes, the generator in evaluation mode, and their labels."""
    model.eval()
    labels = torch.arange(n) % 10
    with torch.no_grad():
        samples = torch.cat(
            [model.generate(1000, labels[i : i + 1000], torch.default_generator) for i in range(0, n, 1000)]
        )
    model.train()
    return samples, labels


class GapProbe:
    """Gap ratios of samples against the two halves of the held-out images (never the embedded half), on the
    model's own blocks and, unless they are the model's own, on ``REFERENCE_TAPS`` so that settings with
    different features compare; the real halves' class means are computed once."""

    def __init__(self, model: DPMEPF, held_out: tuple[torch.Tensor, torch.Tensor]) -> None:
        images, labels = held_out
        half = len(labels) // 2
        self.size = len(labels) - half
        shape = tuple(images.shape[1:])
        own = model.features
        self.probes: dict[str, PerceptualFeatures] = {"gap_own": own}
        if (own.network_spec.name, own.blocks, own.input_size, own.stem) != REFERENCE_TAPS:
            self.probes["gap_ref"] = PerceptualFeatures(shape, blocks=REFERENCE_TAPS[1], input_size=REFERENCE_TAPS[2])
        self.real = {
            name: [
                class_means_per_block(f, images[part], labels[part], 10) for part in (slice(half), slice(half, None))
            ]
            for name, f in self.probes.items()
        }

    def __call__(self, samples: tuple[torch.Tensor, torch.Tensor]) -> dict[str, list[float]]:
        images, labels = samples[0][: self.size], samples[1][: self.size]
        return {
            name: [round(g, 2) for g in gap_ratios(*self.real[name], class_means_per_block(f, images, labels, 10))]
            for name, f in self.probes.items()
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a released DP-MEPF model: a zoo id or a model folder")
    parser.add_argument("--dataset", default="cifar10")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
    from validation_halves import validation_halves

    import zoo

    model = zoo.load(args.model)
    if not isinstance(model, DPMEPF):
        raise SystemExit(f"{args.model} is a {type(model).__name__}, not a DP-MEPF model")
    _, held_out = validation_halves(args.dataset)
    probe = GapProbe(model, held_out)
    print(json.dumps({"model": args.model, **probe(draw_samples(model, probe.size))}))


if __name__ == "__main__":
    main()
