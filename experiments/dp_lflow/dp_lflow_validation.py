"""What a central-images warm start adds to DP-LFlow, on held-out validation images only (never the
test split, never a protected image): one run prints the reconstruction error and the LeNet label
accuracy of one class's model, with and without the warm start.

One class of the validation half that the probes train on (``validation_halves``) stands in for
that class's private images. DP-SGD noise matches the recipe's run over the N/10 private images of a
class (q = 0.1, σ calibrated by PRV for the recipe's steps, noise std σC/(qN/10) on the mean
gradient): the stand-in's images all enter every step (q = 1), so the mean gradient carries the
same noise. The warm start's central image is the class mean with the noise the release over the
class's private images would carry (``emulated_central_images``), and the model is fitted to it by
its own loss before DP-SGD. Scores on the other half's images of the class: mean squared
reconstruction error, the fraction of 1,000 samples that dpzoo's LeNet (trained on validation
images) labels as the class, and their spread (the mean per-pixel std across samples; a model that
draws one image has 0).

    python experiments/dp_lflow/dp_lflow_validation.py --digit 3 --eps 1
    python experiments/dp_lflow/dp_lflow_validation.py --digit 3 --eps 1 --warm-sigma 20
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

from lightning_modules.dp_lflow import DPLFlow
from zoo.data import TensorDataModule
from zoo.metrics.extractors import LeNet, extractor_weights
from zoo.privacy import DPBudget, calibrate_noise_multiplier
from zoo.training import train

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/: the probes' shared protocol
from validation_halves import emulated_central_images, validation_halves  # noqa: E402

RECIPE = dict(image_shape=(1, 28, 28), channels=(32, 64), latent_dim=20, flow_blocks=9, flow_hidden=200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--digit", type=int, default=3)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=4e-3)
    parser.add_argument("--private_n", type=int, default=50000, help="private images of all classes")
    parser.add_argument("--warm-sigma", type=float, default=None, help="σ of the central images (none: no warm start)")
    parser.add_argument("--warm-clip", type=float, default=10.0)
    parser.add_argument("--warm-steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    (images, labels), (held_images, held_labels) = validation_halves(args.dataset)
    prior = [] if args.warm_sigma is None else [(args.warm_sigma, 1.0, 1)]
    sigma = calibrate_noise_multiplier(args.eps, 1e-5, 0.1, args.steps, "prv", prior)
    model = DPLFlow(**RECIPE, learning_rate=args.lr)
    if args.warm_sigma is not None:
        central = emulated_central_images(images, labels, args.warm_sigma, args.warm_clip, args.private_n)
        model.central_images = central[args.digit : args.digit + 1]
        optimizer = model.configure_optimizers()
        for step in range(args.warm_steps):
            loss = model.warm_start_step(step)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    own = images[labels == args.digit]
    data = TensorDataModule(own, labels[labels == args.digit], "validation-stand-in", sample_rate=1.0)
    privacy = DPBudget(noise_multiplier=sigma, max_grad_norm=0.1)
    options = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
    train(model, data, privacy, max_steps=args.steps, enable_model_summary=False, **options)
    model.eval()
    held = held_images[held_labels == args.digit]
    with torch.no_grad():
        error = (model.decoder(model.encoder(held)) - held).square().flatten(1).sum(1).mean().item()
        lenet = LeNet()
        lenet.load_state_dict(load_file(str(extractor_weights(args.dataset))))
        samples = model.sample(1000, seed=args.seed)
        labelled = lenet(samples).argmax(1)
    accuracy = (labelled == args.digit).float().mean().item() * 100
    report = {**vars(args), "sigma": round(sigma, 3), "reconstruction_error_val": round(error, 2)}
    spread = samples.std(0).mean().item()
    print(json.dumps({**report, "lenet_label_accuracy": round(accuracy, 1), "sample_spread": round(spread, 3)}))


if __name__ == "__main__":
    main()
