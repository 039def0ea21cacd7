"""B1′ (a bounded statistic of each step's Poisson minibatch, noised every step: DP-Kernel): canary j is the
record whose feature vector is C·e_j, of one class. The audit trains a module that releases each step's labelled
embedding through ``embedding_release`` under ``DPCallback`` (``KernelEmbeddingRelease``: the sampling, clipping,
noise and accounting DP-Kernel trains with), and scores canary j by the likelihood ratio of the released
coordinate j over the steps (``StepScores``, signal 1/σ noise units)."""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from zoo.auditing.canaries import StepScores, audit_dirac_records
from zoo.auditing.one_run import OneRunBound


class EmbeddingCanaries(pl.LightningModule):
    """Releases each batch's embedding once per step, as DP-Kernel's training step does."""

    privacy_barrier = "B1'"

    def __init__(self, scores: StepScores) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(len(scores.total)))  # a step needs a gradient to step; w stays 0
        self.scores = scores

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        records, labels = batch
        released = self.embedding_release(records, labels, 1)[:, 0]  # type: ignore[operator]
        self.scores.add(released)
        return (self.weight * released.float()).sum()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.0)


def audit_subsampled_release(*plan: Any, **options: Any) -> tuple[OneRunBound, float]:
    """ε̂ of the subsampled embedding release over Dirac canaries, and the ε its ledger states:
    ``audit_dirac_records``'s plan and options."""
    return audit_dirac_records(EmbeddingCanaries, *plan, **options)
