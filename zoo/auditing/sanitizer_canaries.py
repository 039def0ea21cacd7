"""B3 (GS-WGAN's sanitiser: per-row gradients from a critic that trained without DP on its part, clipped and
noised on their way into the generator): canaries in the critics' parts.

K = m parts, canary j alone in part j (one outcome of a partition in which a record's part depends on that
record alone, which the theorem of ``zoo.privacy.mechanisms.private_helpers`` covers). Critic j is the extreme
critic of its part: for every one of the B generated rows its gradient is +C·e_j when canary j is in the data and
−C·e_j when its part is empty, so each row moves by 2C, the most the analysis allows. A step queries one critic,
drawn uniformly from secret randomness (as ``HelperParts.draw_helper`` does), through the module's
``gradient_sanitizer`` under ``DPCallback`` (``OutputGradientSanitizer``: clipping each row to C, the noise
N(0, σ²C²), the check of B rows per step, the accounting at rate 1/K). Canary j's score is the likelihood ratio,
over the steps, of the sanitised gradient's coordinate j summed over the rows (``StepScores``: signal ±√B/σ noise
units): the auditor never learns which critic a step queried."""

from __future__ import annotations

import math

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader

from zoo.auditing.canaries import StepScores, canary_coins, fit_under_dp
from zoo.auditing.one_run import OneRunBound
from zoo.privacy.randomness import private_generator


class SanitizedCanaries(pl.LightningModule):
    """B generated rows of m coordinates, passed through the sanitiser to the critic a step draws."""

    privacy_barrier = "B3"

    def __init__(self, included: np.ndarray, scores: StepScores, rows_per_step: int, gradient_norm: float) -> None:
        super().__init__()
        canaries = len(included)
        self.rows = nn.Parameter(torch.zeros(rows_per_step, canaries))
        #: critic j's gradient direction for each row: +e_j with canary j in its part, −e_j without
        self.signs = torch.where(torch.from_numpy(included), 1.0, -1.0)
        self.gradient_norm = gradient_norm
        self.sanitizer_sample_rate = 1 / canaries
        self.sanitized_rows_per_step = rows_per_step
        self.private_dataset_size = int(included.sum())
        self.scores = scores
        self._draws = private_generator()

    def training_step(self, step: Tensor, batch_idx: int) -> Tensor:
        queried = int(torch.randint(len(self.signs), (1,), generator=self._draws))
        sanitized = self.gradient_sanitizer(self.rows)  # type: ignore[operator]
        # a mean over rows, as GS-WGAN's generator loss: each row's gradient is ±C·e_queried
        return self.signs[queried] * self.gradient_norm * sanitized[:, queried].mean()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.rows.grad is not None:
            self.scores.add(self.rows.grad.sum(dim=0))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.0)


def audit_sanitized_output(
    parts: int,
    row_noise_multiplier: float,
    rows_per_step: int,
    steps: int,
    delta: float,
    clip_norm: float = 1.0,
    gradient_norm: float | None = None,
    confidence: float = 0.95,
    accountant: str = "prv",
) -> tuple[OneRunBound, float]:
    """ε̂ of the sanitiser over one canary per part (``parts`` canaries: the rate 1/K is the plan's) whose critics'
    row gradients have norm ``gradient_norm`` (C by default), and the ε its ledger states (by ``accountant``)."""
    included = canary_coins(parts)
    scores = StepScores(parts, 1 / parts, signal=math.sqrt(rows_per_step) / row_noise_multiplier, signed=True)
    model = SanitizedCanaries(included, scores, rows_per_step, gradient_norm or clip_norm)
    steps_loader = DataLoader(range(steps), batch_size=None)
    stated = fit_under_dp(model, steps_loader, steps, row_noise_multiplier, clip_norm, delta, accountant)
    return scores.bound(included, delta, confidence), stated
