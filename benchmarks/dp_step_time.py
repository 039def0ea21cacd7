"""Time one training step of a DP-LFlow-sized model, non-private and under DPCallback.

Model: conv autoencoder [32, 64] + 9-block RealNVP (hidden 200) on a 20-d latent,
28×28 inputs, batch 500 (Poisson with expected size 500 for the private runs).

On a shared machine one long run per mode measures the load as much as the mode, so the
modes are interleaved: each round runs every mode for a few steps, in a rotating order, and
the report gives, per mode, the median step time over all rounds, its spread (the 25th-75th
percentile range) and the median of the per-round ratios to the non-private step of the same
round. It prints how long it will take before starting.

    python benchmarks/dp_step_time.py [--rounds 5] [--steps 6] [--batch 500]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import warnings

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_modules.dp_lflow import DPLFlow
from zoo.privacy import DPCallback, poisson_loader

MODES = ("non-private", "ghost", "hooks", "functorch")
WARM_UP_STEPS = 2


class StepTimer(pl.Callback):
    def __init__(self) -> None:
        self.durations: list[float] = []

    def on_train_batch_start(self, *args) -> None:
        self._start = time.perf_counter()

    def on_train_batch_end(self, *args) -> None:
        self.durations.append(time.perf_counter() - self._start)


def step_seconds(mode: str, data: TensorDataset, batch: int, steps: int) -> list[float]:
    """Step times of one short run of ``mode`` after its warm-up steps."""
    timer = StepTimer()
    if mode == "non-private":
        loader, callbacks = DataLoader(data, batch_size=batch, shuffle=True), []
    else:
        dp = DPCallback(noise_multiplier=1.0, max_grad_norm=0.1, per_example_mode=mode, dataset_id="benchmark")
        loader, callbacks = poisson_loader(data, batch / len(data)), [dp]
    trainer = pl.Trainer(
        max_steps=steps + WARM_UP_STEPS,
        callbacks=[*callbacks, timer],
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        log_every_n_steps=10**6,  # ε is computed once at the end, outside the timed steps' median
    )
    trainer.fit(DPLFlow(), train_dataloaders=loader)
    return timer.durations[WARM_UP_STEPS:-1]  # the last step also logs ε


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values[0],) * 3
    return q1, median, q3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=6, help="timed steps per mode and round")
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)
    torch.manual_seed(0)
    data = TensorDataset(torch.rand(10 * args.batch, 1, 28, 28), torch.zeros(10 * args.batch, dtype=torch.long))
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch}: {args.rounds} rounds × "
        f"{len(MODES)} modes × {args.steps} timed steps (on 2 CPU cores about 1.5 minutes per round at batch 500; "
        "the time left is printed after each round)"
    )
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    ratios: dict[str, list[float]] = {mode: [] for mode in MODES}
    start = time.perf_counter()
    for round_index in range(args.rounds):
        order = MODES[round_index % len(MODES) :] + MODES[: round_index % len(MODES)]
        medians = {mode: statistics.median(step_seconds(mode, data, args.batch, args.steps)) for mode in order}
        for mode in MODES:
            times[mode].append(medians[mode])
            ratios[mode].append(medians[mode] / medians["non-private"])
        left = (time.perf_counter() - start) / (round_index + 1) * (args.rounds - round_index - 1) / 60
        print(
            f"round {round_index + 1}/{args.rounds}: "
            + ", ".join(f"{m} {medians[m]:.3f} s" for m in MODES)
            + f"; about {left:.1f} min left"
        )
    print(f"\n{'mode':<12}{'median s/step':>15}{'25-75% range':>18}{'× non-private':>16}{'ratio range':>16}")
    for mode in MODES:
        q1, median, q3 = quartiles(times[mode])
        r1, ratio, r3 = quartiles(ratios[mode])
        print(f"{mode:<12}{median:>15.3f}{f'{q1:.3f}-{q3:.3f}':>18}{ratio:>16.2f}{f'{r1:.2f}-{r3:.2f}':>16}")


if __name__ == "__main__":
    main()
