"""Time one training step of a DP-LFlow-sized model, non-private and under DPCallback.

Model: conv autoencoder [32, 64] + 9-block RealNVP (hidden 200) on a 20-d latent,
28×28 inputs, batch 500 (Poisson with expected size 500 for the private runs).
Prints the median step time per per-example-gradient mode and its ratio to non-private.

    python benchmarks/dp_step_time.py [--steps 20] [--batch 500]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_modules.dp_lflow import DPLFlow
from zoo.privacy import DPCallback, poisson_loader


class StepTimer(pl.Callback):
    def __init__(self) -> None:
        self.durations: list[float] = []

    def on_train_batch_start(self, *args) -> None:
        self._start = time.perf_counter()

    def on_train_batch_end(self, *args) -> None:
        self.durations.append(time.perf_counter() - self._start)


def median_step_seconds(loader: DataLoader, steps: int, callbacks: list[pl.Callback]) -> float:
    timer = StepTimer()
    trainer = pl.Trainer(
        max_steps=steps,
        callbacks=[*callbacks, timer],
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(DPLFlow(), train_dataloaders=loader)
    return statistics.median(timer.durations[3:])  # skip warm-up steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    data = TensorDataset(torch.rand(10 * args.batch, 1, 28, 28), torch.zeros(10 * args.batch, dtype=torch.long))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch}, {args.steps} steps")
    baseline = median_step_seconds(DataLoader(data, batch_size=args.batch, shuffle=True), args.steps, [])
    print(f"{'mode':<12}{'s/step':>10}{'× non-private':>16}")
    print(f"{'non-private':<12}{baseline:>10.3f}{1.0:>16.2f}")
    for mode in ("ghost", "hooks", "functorch"):
        dp = DPCallback(noise_multiplier=1.0, max_grad_norm=0.1, per_example_mode=mode, dataset_id="benchmark")
        seconds = median_step_seconds(poisson_loader(data, 0.1), args.steps, [dp])
        print(f"{mode:<12}{seconds:>10.3f}{seconds / baseline:>16.2f}")
    start = time.perf_counter()
    epsilon = dp.epsilon
    print(
        f"each DP step includes one exact ε evaluation (here ε = {epsilon:.2f}) by the {dp.accountant} "
        f"accountant: {time.perf_counter() - start:.3f} s of the step"
    )


if __name__ == "__main__":
    main()
