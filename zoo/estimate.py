"""How long a plan will take, from a measured rate: the plan run for a few steps of each stage on random
stand-in images of the data's shape and classes (never the private data, nothing saved, the random state
restored), its steps timed, and the rest of its work (a release's pass over the data) scaled to the
data's size."""

from __future__ import annotations

import contextlib
import copy
import math
import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning import LightningDataModule

from zoo.data.tensors import TensorDataModule
from zoo.methods import DPGenerativeModel
from zoo.privacy import Budget
from zoo.stages import HelperSteps, PrivateSteps, PublicSteps
from zoo.training import QUIET_TRAINER, quiet_lightning, train

#: steps timed per stage (the first is not counted: it warms up)
MEASURED_STEPS = 5
STAND_IN_RECORDS = 2000
STAND_IN_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Estimate:
    seconds: float
    #: steps per second of the plan's longest step stage, and its steps
    rate: float
    steps: int
    stand_in: int

    def line(self) -> str:
        return (
            f"about {duration(self.seconds)} ({self.rate:.3g} steps/s over {self.steps:,} step"
            f"{'s' * (self.steps != 1)}, measured on "
            f"{self.stand_in:,} random stand-in images of the data's shape)"
        )


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


class _StepTimes(pl.Callback):
    """Each stage's fit window and step times; stops a stage after ``steps`` steps."""

    def __init__(self, steps: int) -> None:
        self.steps, self.fits = steps, []

    def on_fit_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.fits.append({"start": time.perf_counter(), "steps": []})

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        steps = self.fits[-1]["steps"]
        steps.append(time.perf_counter())
        trainer.should_stop = trainer.should_stop or len(steps) >= self.steps

    def on_fit_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.fits[-1]["end"] = time.perf_counter()


def estimate_time(
    model: DPGenerativeModel, datamodule: LightningDataModule, budget: Budget, trainer_options: dict[str, Any]
) -> Estimate | None:
    """The plan's time on ``datamodule`` (with its ``train_set``, ``sample_rate``, ``image_shape`` and
    ``num_classes``) under ``budget``; None when the plan's length is not set in steps."""
    datamodule.setup("fit")
    records, shape = len(datamodule.train_set), tuple(datamodule.image_shape)
    planned = _planned_steps(model, datamodule, trainer_options.get("max_steps"))
    if planned is None:
        return None
    stand_in = min(records, STAND_IN_RECORDS, max(1, STAND_IN_BYTES // (4 * math.prod(shape))))
    generator = torch.Generator().manual_seed(0)
    data = TensorDataModule(
        torch.rand(stand_in, *shape, generator=generator),
        torch.arange(stand_in) % datamodule.num_classes,
        "stand-in",
        sample_rate=min(1.0, datamodule.sample_rate * records / stand_in),
    )
    timer = _StepTimes(MEASURED_STEPS)
    with _unchanged_randomness(), quiet_lightning():
        start = time.perf_counter()
        options = {**trainer_options, **QUIET_TRAINER, "callbacks": [timer]}
        train(copy.deepcopy(model), data, copy.deepcopy(budget), **options)
        wall = time.perf_counter() - start
    windows = [fit["end"] - fit["start"] for fit in timer.fits]
    per_step = [_per_step(fit) for fit in timer.fits]
    setup = sum(
        window - rate * len(fit["steps"]) for window, rate, fit in zip(windows, per_step, timer.fits, strict=True)
    )
    once = (wall - sum(windows)) * records / stand_in + setup
    seconds = once + sum(rate * steps for rate, steps in zip(per_step, planned, strict=True))
    longest = max(range(len(planned)), key=lambda i: per_step[i] * planned[i])
    return Estimate(seconds, 1 / per_step[longest], planned[longest], stand_in)


def _planned_steps(
    model: DPGenerativeModel, datamodule: LightningDataModule, max_steps: int | None
) -> list[int] | None:
    """Steps of each step stage of the plan, in the order the plan runs them."""
    stages = [stage for part, data in model.training_parts(datamodule) for stage in part.stages(data)]
    steps = [s.max_steps or max_steps for s in stages if isinstance(s, (PrivateSteps, PublicSteps, HelperSteps))]
    return None if not steps or any(n is None or n < 1 for n in steps) else steps


def _per_step(fit: dict[str, Any]) -> float:
    times = [fit["start"], *fit["steps"]]
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    return statistics.median(gaps[1:] or gaps)


@contextlib.contextmanager
def _unchanged_randomness() -> Iterator[None]:
    """The measurement must not change what the real run draws (its seed was set before): Python's, numpy's,
    torch's CPU generator and every CUDA device's (a run on a GPU draws its noise there)."""
    python, numpy = random.getstate(), np.random.get_state()
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    try:
        with torch.random.fork_rng(devices=cuda):
            yield
    finally:
        random.setstate(python)
        np.random.set_state(numpy)
