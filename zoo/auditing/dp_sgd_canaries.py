"""B4 and B2 (DP-SGD on the released model: DP-LFlow, DP-NF, DP²-VAE's decoder; on a critic: Private Set): Dirac
canaries. The private module is a linear score w·x whose per-record gradient is the record itself; canary j is
the record C·e_j. The audit trains it under ``DPCallback`` (Poisson sampling, per-example clipping, noise,
accounting: the methods' own path) at the given σ, q and steps, and scores canary j by the likelihood ratio of
its coordinates of the privatised gradients over the steps (``StepScores``, signal 1/σ noise units). B2 and B4
run the same mechanism (``PerExampleDPSGD``); they differ in which module is private, which a linear score does
not see."""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from zoo.auditing.canaries import StepScores, audit_dirac_records
from zoo.auditing.one_run import OneRunBound

DP_SGD_BARRIERS = ("B4", "B2")


class DiracCanaries(pl.LightningModule):
    """A linear score w·x, trained by DP-SGD: a record's gradient is the record, so canary C·e_j moves only w_j."""

    def __init__(self, scores: StepScores, barrier: str = "B4") -> None:
        super().__init__()
        if barrier not in DP_SGD_BARRIERS:
            raise ValueError(f"Dirac canaries audit DP-SGD barriers {DP_SGD_BARRIERS}, got {barrier!r}")
        self.privacy_barrier = barrier
        self.score = nn.Linear(len(scores.total), 1, bias=False)
        nn.init.zeros_(self.score.weight)
        self.scores = scores

    def private_modules(self) -> list[nn.Module]:
        return [self.score]

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        records, _ = batch
        return self.score(records).sum()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        grad = self.score.weight.grad
        if grad is not None:  # the privatised gradient DPCallback left for this step
            self.scores.add(grad)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.0)  # w stays 0: every step queries the same score


def audit_dp_sgd(*plan: Any, barrier: str = "B4", **options: Any) -> tuple[OneRunBound, float]:
    """ε̂ of DP-SGD over Dirac canaries, and the ε its ledger states: ``audit_dirac_records``'s plan and options."""
    return audit_dirac_records(lambda scores: DiracCanaries(scores, barrier), *plan, **options)
