"""The quick-start job: a short private training of DP-LFlow on real MNIST and a sample grid.

It trains one class, DP-LFlow's unit of training (the paper's recipe: sampling rate 0.1,
300 steps, C = 0.1), with the full private path: DPCallback, Poisson sampling, accounting
and ledger. It demonstrates that path; the tuned class-conditional checkpoints come later.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytorch_lightning as pl
from torchvision.utils import save_image

from lightning_modules.dp_lflow import DPLFlow
from zoo.data import ImageDataModule
from zoo.privacy import DPCallback


@dataclass
class DemoResult:
    digit: int
    samples_path: Path
    ledger_path: Path
    epsilon: float
    delta: float
    steps: int
    noise_multiplier: float


def run_demo(
    out_dir: Path,
    digit: int = 3,
    steps: int = 300,
    target_epsilon: float = 10.0,
    delta: float = 1e-5,
    sample_rate: float = 0.1,
    max_grad_norm: float = 0.1,
    seed: int = 0,
) -> DemoResult:
    pl.seed_everything(seed, verbose=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = ImageDataModule("mnist", sample_rate=sample_rate, label=digit)
    dp = DPCallback(target_epsilon=target_epsilon, delta=delta, max_grad_norm=max_grad_norm, planned_steps=steps)
    trainer = pl.Trainer(
        max_steps=steps,
        callbacks=[dp],
        accelerator="auto",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        limit_val_batches=0,
    )
    model = DPLFlow()
    trainer.fit(model, data)
    model.eval()
    samples_path = out_dir / "samples.png"
    save_image(model.sample(64, seed=seed).cpu(), samples_path, nrow=8, padding=2, pad_value=1.0)
    ledger_path = out_dir / "privacy_ledger.json"
    ledger_path.write_text(json.dumps(model.privacy_ledger.to_dict(), indent=2))
    entry = dp.entry
    return DemoResult(digit, samples_path, ledger_path, dp.epsilon, delta, entry.steps, entry.noise_multiplier)
