"""Does a DP-SGD classifier help DP-MERF at ε = 1? Tried for issue 27 on held-out validation images
only; not kept (docs/methods/dp-merf.md).

The plan split: a small CNN (Papernot et al.'s tanh network) trained by DP-SGD (Opacus, Poisson
batches) on ``--guide-eps`` of the budget, then the DP-MERF release calibrated to what is left,
composed by PRV; the classifier is post-processing of its DP-SGD steps. Two uses of it, each free
of further cost: a cross-entropy term ``--guide-weight`` × CE(classifier(G(z, y)), y) in the
generator's loss from step ``--guide-from`` on, and ``--filter p``, keeping only samples whose
classifier probability of their label is at least p. Emulated as ``dp_merf_validation.py`` is: the
training half of the validation images stands for the N = 50,000 private images (noise calibrated
for N, Poisson rate batch/5,000 on the half), the CNN CAS is tested on the other half. About 3
minutes per run on one core.

    python experiments/dp_merf/dp_merf_guidance.py --guide-eps 0.5                      # the split alone
    python experiments/dp_merf/dp_merf_guidance.py --guide-eps 0.5 --guide-weight 1e-4  # guidance
    python experiments/dp_merf/dp_merf_guidance.py --guide-eps 0.5 --filter 0.5         # filtering
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
from opacus import PrivacyEngine
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_modules.nets.generators import build_generator
from lightning_modules.nets.random_features import RandomFourierFeatures, labelled_embedding
from zoo.privacy import calibrate_noise_multiplier
from zoo.privacy.accounting import epsilon_spent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from validation_halves import held_out_cnn_accuracy, validation_halves  # noqa: E402

DELTA = 1e-5


def tanh_cnn(shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Papernot et al. (2021)'s DP-SGD MNIST network: tanh activations keep clipped gradients informative."""
    trunk = nn.Sequential(
        nn.Conv2d(shape[0], 16, 8, 2, padding=3), nn.Tanh(), nn.MaxPool2d(2, 1),
        nn.Conv2d(16, 32, 4, 2), nn.Tanh(), nn.MaxPool2d(2, 1), nn.Flatten(),
    )  # fmt: skip
    width = trunk(torch.zeros(1, *shape)).shape[1]
    return nn.Sequential(trunk, nn.Linear(width, 32), nn.Tanh(), nn.Linear(32, num_classes))


def dp_sgd_classifier(images: Tensor, labels: Tensor, sigma: float, args: argparse.Namespace) -> nn.Module:
    """DP-SGD (Opacus) at noise multiplier σ, clip 1, SGD with momentum 0.9, Poisson batches."""
    network = tanh_cnn(tuple(images.shape[1:]), 10)
    optimizer = torch.optim.SGD(network.parameters(), lr=args.guide_lr, momentum=0.9)
    loader = DataLoader(TensorDataset(images, labels), batch_size=args.guide_batch)
    network, optimizer, loader = PrivacyEngine().make_private(
        module=network, optimizer=optimizer, data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0
    )
    steps = 0
    while steps < args.guide_steps:
        for x, y in loader:
            if len(y):
                optimizer.zero_grad()
                nn.functional.cross_entropy(network(x), y).backward()
                optimizer.step()
            steps += 1
            if steps == args.guide_steps:
                break
    released = tanh_cnn(tuple(images.shape[1:]), 10)  # without Opacus' hooks, which break a later backward
    released.load_state_dict(network._module.state_dict())
    return released.eval().requires_grad_(False)


def filtered_samples(
    generator: nn.Module, classifier: nn.Module, code_dim: int, threshold: float, per_class: int
) -> tuple[Tensor, Tensor]:
    """``per_class`` samples of each class whose classifier probability of that class is ≥ threshold."""
    images, labels = [], []
    for label in range(10):
        kept: list[Tensor] = []
        for _ in range(50):
            drawn = generator(torch.randn(per_class, code_dim), torch.full((per_class,), label))
            kept.append(drawn[classifier(drawn).softmax(1)[:, label] >= threshold])
            if sum(map(len, kept)) >= per_class:
                break
        images.append(torch.cat(kept)[:per_class])
        labels.append(torch.full((len(images[-1]),), label))
    return torch.cat(images), torch.cat(labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--eps", type=float, default=1.0, help="the whole plan's ε")
    parser.add_argument("--guide-eps", type=float, default=0.5, help="the classifier's share of ε")
    parser.add_argument("--guide-steps", type=int, default=200)
    parser.add_argument("--guide-batch", type=int, default=500)
    parser.add_argument("--guide-lr", type=float, default=1.0)
    parser.add_argument("--guide-weight", type=float, default=0.0, help="λ of the cross-entropy term")
    parser.add_argument("--guide-from", type=int, default=1500, help="generator step the term starts at")
    parser.add_argument("--filter", type=float, default=None, help="keep samples with probability ≥ this")
    parser.add_argument("--width2", type=float, default=20, help="kernel width² (the shipped recipe's)")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--private_n", type=int, default=50000, help="size of the private set the noise stands for")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    start = time.time()
    (images, labels), held_out = validation_halves(args.dataset)
    shape = tuple(images.shape[1:])
    rate = args.guide_batch / args.private_n
    guide_sigma = calibrate_noise_multiplier(args.guide_eps, DELTA, rate, args.guide_steps, "prv")
    classifier = dp_sgd_classifier(images, labels, guide_sigma, args)
    prior = [(guide_sigma, rate, args.guide_steps)]
    sigma = calibrate_noise_multiplier(args.eps, DELTA, 1.0, 1, "prv", prior)
    features = RandomFourierFeatures(math.prod(shape), 10000, math.sqrt(args.width2), seed=args.seed)
    with torch.no_grad():
        mean = labelled_embedding(features(images), labels, 10) / len(labels)
    target = mean + sigma / args.private_n * torch.randn(mean.shape)
    generator = build_generator(
        kind="conv",
        code_dim=5,
        num_classes=10,
        image_shape=shape,
        hidden=200,
        channels=(16, 8),
        kernel_size=5,
        batch_norm=False,
        width=64,
    )
    optimizer = torch.optim.Adam(generator.parameters(), lr=0.01)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, args.steps // 5, 0.9)
    for step in range(args.steps):
        codes, codes_labels = torch.randn(100, 5), torch.randint(10, (100,))
        drawn = generator(codes, codes_labels)
        loss = (target - labelled_embedding(features(drawn), codes_labels, 10) / 100).square().sum()
        if args.guide_weight and step >= args.guide_from:
            loss = loss + args.guide_weight * nn.functional.cross_entropy(classifier(drawn), codes_labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    generator.eval()
    with torch.no_grad():
        if args.filter is None:
            sample_labels = torch.arange(10_000) % 10
            samples = generator(torch.randn(10_000, 5), sample_labels)
        else:
            samples, sample_labels = filtered_samples(generator, classifier, 5, args.filter, 1000)
        held_out_accuracy = (classifier(held_out[0]).argmax(1) == held_out[1]).float().mean().item()
    report = {
        **vars(args),
        "guide_sigma": round(guide_sigma, 3),
        "merf_sigma": round(sigma, 3),
        "epsilon": round(epsilon_spent([*prior, (sigma, 1.0, 1)], DELTA, "prv"), 3),
        "classifier_val": round(100 * held_out_accuracy, 2),
        "cas_cnn_val": round(held_out_cnn_accuracy(samples, sample_labels, held_out), 2),
    }
    print(json.dumps({**report, "secs": round(time.time() - start)}))


if __name__ == "__main__":
    main()
