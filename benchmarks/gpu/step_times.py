"""Step timing for ``benchmarks/gpu/dp_mepf_cifar10.sh``, which sets a run's ``max_steps`` to fill its minutes from
it: a Lightning callback named on ``dpzoo fit``'s command line, this folder on ``PYTHONPATH``
(``--trainer.callbacks+=step_times.StepTimes``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch


class StepTimes(pl.Callback):
    """Writes to ``path`` (JSON) the seconds per training step after the first ``warmup`` fraction of the steps
    (cuDNN's autotuning and the allocator settle there), the device synchronised at every step's end, and the
    device's name."""

    def __init__(self, path: str, warmup: float = 0.1) -> None:
        self.path, self.warmup = Path(path), warmup
        self.ends: list[float] = []

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        if pl_module.device.type == "cuda":
            torch.cuda.synchronize(pl_module.device)
        self.ends.append(time.perf_counter())

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if len(self.ends) < 2:
            raise RuntimeError(f"{len(self.ends)} steps ran: timing needs at least 2")
        first = min(max(1, round(self.warmup * len(self.ends))), len(self.ends) - 1)
        device = pl_module.device
        result = {
            "steps": len(self.ends),
            "timed_steps": len(self.ends) - first,
            "seconds_per_step": (self.ends[-1] - self.ends[first - 1]) / (len(self.ends) - first),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(result, indent=2) + "\n")
