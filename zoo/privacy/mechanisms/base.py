"""What a training mechanism (a barrier applied inside training steps) gives DPCallback.

DPCallback keeps what every mechanism shares: the budget, σ calibration, the ledger, ε
logging, checkpoints. A mechanism owns the rest: what it samples, how one step is made
private, its sensitivity argument (in its module docstring) and the extra ledger parameters
an auditor needs to check that argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytorch_lightning as pl
import torch


@dataclass(frozen=True)
class Sampling:
    """How a step touches the private data: ``sample_rate`` is the chance a given record enters
    a step (independently across steps), ``dataset_size`` the number of private records."""

    dataset_size: int
    sample_rate: float


class TrainingMechanism:
    """Base of the mechanisms applied inside training steps; the hooks a mechanism does not need
    are no-ops here."""

    #: the mechanism's name in the ledger
    name: str

    def __init__(
        self,
        pl_module: pl.LightningModule,
        max_grad_norm: float,
        per_example_mode: str,
        loss_reduction: str,
        noise_generator: torch.Generator,
    ) -> None:
        """What DPCallback builds every mechanism from: the module, the clip bound C, the per-example gradient
        engine, how the loss reduces over a batch, and the generator of the noise."""

    @property
    def per_example_gradients(self) -> str | None:
        """The per-example gradient engine, for the ledger (None when the mechanism has none)."""
        return None

    def sampling(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> Sampling:
        """Check the sampling the accountant assumes and report it."""
        raise NotImplementedError

    def accounted_noise_multiplier(self, noise_multiplier: float) -> float:
        """The accountant's noise multiplier (noise std over the step's sensitivity) for a user's σ."""
        raise NotImplementedError

    def ledger_parameters(self, accounted: float) -> dict[str, Any]:
        """What an auditor needs beyond (σ, C, q, steps) to check the sensitivity argument."""
        return {}

    def start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, accounted: float) -> None:
        """Prepare the first step, noise at the accountant's multiplier ``accounted``."""
        raise NotImplementedError

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch_idx: int) -> None:
        pass

    def on_before_backward(self) -> None:
        pass

    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        pass

    def is_private_step(self, optimizer: torch.optim.Optimizer) -> bool:
        """Whether this optimizer step releases something computed from private data."""
        raise NotImplementedError

    def privatise_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Make the step private (its gradients clipped and noised); called once the budget allows it."""
        raise NotImplementedError

    def overwritten_gradients(self) -> list[torch.nn.Parameter]:
        """The parameters whose gradients every private step replaces (what DDP need not all-reduce)."""
        return []

    def close(self) -> None:
        pass
