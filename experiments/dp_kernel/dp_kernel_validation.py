"""Choose DP-Kernel's settings on held-out validation images only (never the test split, never a
protected image): one run prints the validation CNN CAS of one setting.

The 10,000 validation images that every recipe holds out are split in two (``validation_halves``).
The generator trains as ``DPKernel`` does on Poisson batches of 5,000 of them at rate B/5,000, and
each step's labelled embedding carries the noise the real run would carry: σ calibrated by PRV for
T steps at rate B/N over the N private images (N = 50,000 for MNIST and Fashion-MNIST, 40,000 for
CIFAR-10), std σ/B on the mean. A CNN (DP-LFlow E.4) trained on 10,000 samples is tested on the
other 5,000 validation images. With ``--warm-sigma``, central images (``emulated_central_images``)
are released first at that σ, the generator is fitted to them for ``--warm-steps``, and the
private steps are calibrated to what is left of ε.

    python experiments/dp_kernel/dp_kernel_validation.py --dataset mnist --eps 1 --steps 2000 --widths 2,4,8
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import torch
from torchvision.utils import save_image

from lightning_modules.nets.generators import GENERATOR_KINDS, build_generator, generated_embedding
from lightning_modules.nets.random_features import fourier_features, labelled_embedding, mixture_frequencies
from zoo.privacy import calibrate_noise_multiplier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from validation_halves import emulated_central_images, held_out_cnn_accuracy, validation_halves  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--private_n", type=int, default=50000, help="size of the private set the noise stands for")
    parser.add_argument("--batch", type=int, default=500, help="expected Poisson batch size B")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--features", type=int, default=2000, help="random features per step (fresh each step)")
    parser.add_argument("--widths", default="2,4,8", help="kernel widths of the mixture, in [0, 1] pixel units")
    parser.add_argument("--generated", type=int, default=200, help="generated images per step")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--code", type=int, default=20)
    parser.add_argument("--generator", default="dcgan", choices=GENERATOR_KINDS)
    parser.add_argument("--width", type=int, default=32, help="width of a dcgan/resnet generator")
    parser.add_argument("--warm-sigma", type=float, default=None, help="σ of the central images (none: no warm start)")
    parser.add_argument("--warm-clip", type=float, default=10.0, help="L2 bound R on each image for the central images")
    parser.add_argument("--warm-steps", type=int, default=500)
    parser.add_argument("--fixed-features", action="store_true", help="draw the frequencies once, not every step")
    parser.add_argument("--ema", type=float, default=None, help="sample from a moving average of the generator")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", default=None, help="also save 10 samples per class here (a PNG) to look at")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    (images, labels), held_out = validation_halves(args.dataset)
    widths = tuple(float(w) for w in args.widths.split(","))
    sample_rate = args.batch / args.private_n
    prior = [] if args.warm_sigma is None else [(args.warm_sigma, 1.0, 1)]
    sigma = calibrate_noise_multiplier(args.eps, 1e-5, sample_rate, args.steps, "prv", prior)
    shape = tuple(images.shape[1:])
    generator = build_generator(
        kind=args.generator,
        code_dim=args.code,
        num_classes=10,
        image_shape=shape,
        hidden=200,
        channels=(16, 8),
        kernel_size=5,
        batch_norm=False,
        width=args.width,
    )
    optimizer = torch.optim.Adam(generator.parameters(), lr=args.lr, betas=(0.5, 0.999))
    public = torch.Generator().manual_seed(args.seed)
    average = (
        None
        if args.ema is None
        else torch.optim.swa_utils.AveragedModel(
            generator, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(args.ema)
        )
    )
    start = time.time()
    if args.warm_sigma is not None:
        central = emulated_central_images(images, labels, args.warm_sigma, args.warm_clip, args.private_n)
        for _ in range(args.warm_steps):
            frequencies = mixture_frequencies(images[0].numel(), args.features // 2, widths, public)
            target = labelled_embedding(fourier_features(central, frequencies), torch.arange(10), 10) / 10
            step(generator, optimizer, target, frequencies, args)
    frequencies = mixture_frequencies(images[0].numel(), args.features // 2, widths, public)
    for _ in range(args.steps):
        if not args.fixed_features:
            frequencies = mixture_frequencies(images[0].numel(), args.features // 2, widths, public)
        chosen = torch.rand(len(labels)) < args.batch / len(labels)
        total = labelled_embedding(fourier_features(images[chosen].double(), frequencies), labels[chosen], 10)
        target = (total + sigma * torch.randn(total.shape, dtype=total.dtype)).float() / args.batch
        step(generator, optimizer, target, frequencies, args)
        if average is not None:
            average.update_parameters(generator)
    generator = generator if average is None else average.module
    generator.eval()
    with torch.no_grad():
        sample_labels = torch.arange(10_000) % 10
        samples = torch.cat(
            [generator(torch.randn(1000, args.code), sample_labels[i : i + 1000]) for i in range(0, 10_000, 1000)]
        )
    if args.grid:
        save_image(samples[:100], args.grid, nrow=10)
    seconds = round(time.time() - start)
    accuracy = held_out_cnn_accuracy(samples, sample_labels, held_out)
    print(
        json.dumps({**vars(args), "sigma": round(sigma, 3), "cas_cnn_val": round(accuracy, 2), "train_secs": seconds})
    )


def step(generator: torch.nn.Module, optimizer: torch.optim.Optimizer, target: torch.Tensor, frequencies, args) -> None:
    """One generator step on the distance between ``target`` and the generated batch's mean embedding."""
    features = functools.partial(fourier_features, frequencies=frequencies)
    fitted = generated_embedding(generator, args.code, 10, args.generated, features)
    loss = (target - fitted).square().sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


if __name__ == "__main__":
    main()
